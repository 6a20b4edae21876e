"""The service's bearer token when none is configured (docs/service.md section 1): a random one, written to
``<archive dir>/http-token`` (mode 0600, the owner's alone, as Jupyter keeps its token in a file only its user
reads). The owner's CLI and ``mediadriver page`` read it there; nobody else can, as nobody else can read the
archive's files. It is never put in an environment variable, which a child process or ``/proc/<pid>/environ``
would show. Imports nothing of the service, so the CLI can use it without the ``service`` extra."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

TOKEN_FILE_NAME = "http-token"
TOKEN_ENV = "MEDIADRIVER_HTTP_TOKEN"
TOKEN_FILE_MODE = 0o600


def token_path(archive_dir: str | os.PathLike[str]) -> Path:
    return Path(archive_dir) / TOKEN_FILE_NAME


def write_new_token(archive_dir: str | os.PathLike[str]) -> tuple[str, Path]:
    """A fresh token in a fresh 0600 file (written aside and renamed in, so a reader sees all or none of it)."""
    token = secrets.token_urlsafe(32)
    path = token_path(archive_dir)
    tmp = path.with_name(f".{TOKEN_FILE_NAME}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, TOKEN_FILE_MODE)
    try:
        os.fchmod(fd, TOKEN_FILE_MODE)
        os.write(fd, (token + "\n").encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return token, path


def read_token(path: str | os.PathLike[str]) -> str | None:
    return Path(path).read_text().strip() or None


def remove_token(path: Path, token: str) -> None:
    """At the service's stop: the file goes unless another service has written its own since."""
    with contextlib.suppress(OSError):
        if read_token(path) == token:
            path.unlink()
