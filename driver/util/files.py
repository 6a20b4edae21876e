"""Files the driver shares with its clients: created with the operator's modes and group, and allocated
before anyone maps them.

A mapped page the file system cannot back raises SIGBUS in whoever touches it first (the driver pre-touching
or writing its error log, a publisher mid-term), so every shared file is reserved in full with
``posix_fallocate`` at creation; no space is then an error at creation, naming the file and the space needed
(docs/cnc.md, "Allocation and permissions").
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DIR_MODE = 0o700
DEFAULT_FILE_MODE = 0o600
GROUP_DIR_MODE = 0o770
GROUP_FILE_MODE = 0o660


@dataclass(frozen=True)
class FilePermissions:
    """Mode and group of the aeron dir, its subdirectories and every file in them (umask ignored)."""

    dir_mode: int = DEFAULT_DIR_MODE
    file_mode: int = DEFAULT_FILE_MODE
    gid: int | None = None

    @classmethod
    def from_settings(
        cls, dir_group: int | None, dir_mode: int | None = None, file_mode: int | None = None
    ) -> FilePermissions:
        """The policy of ``aeron.dir.group``/``aeron.dir.mode``/``aeron.file.mode`` (None: not set): private
        to this user unless a group is named, whose members then get read-write (docs/getting-started.md, "Sharing the aeron
        dir"). The driver and the archive both build theirs here."""
        grouped = dir_group is not None
        return cls(
            dir_mode if dir_mode is not None else GROUP_DIR_MODE if grouped else DEFAULT_DIR_MODE,
            file_mode if file_mode is not None else GROUP_FILE_MODE if grouped else DEFAULT_FILE_MODE,
            dir_group,
        )

    def apply_to_dir(self, path: Path) -> None:
        if self.gid is not None:
            os.chown(path, -1, self.gid)
        os.chmod(path, self.dir_mode)

    def apply_to_fd(self, fd: int) -> None:
        if self.gid is not None:
            os.fchown(fd, -1, self.gid)
        os.fchmod(fd, self.file_mode)


class FileAllocationError(OSError):
    """A shared file could not be created or allocated; the message names it and the space it needs."""


def free_bytes(path: Path) -> int | None:
    with contextlib.suppress(OSError):
        st = os.statvfs(path)
        return st.f_bavail * st.f_frsize
    return None


def unallocated_bytes(path: str | Path) -> tuple[int, int]:
    """The file's device and how many of its bytes have no space yet (a sparse file's holes)."""
    st = os.stat(path)
    return st.st_dev, max(0, st.st_size - st.st_blocks * 512)


def create_allocated_file(path: Path, length: int, permissions: FilePermissions, reserve: bool = True) -> int:
    """Create ``path`` (it must not exist) with ``length`` zero bytes all allocated (``reserve``; else sparse:
    pages are allocated when first written); returns its open fd.

    On failure nothing is left behind: the file is removed and FileAllocationError says why.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, permissions.file_mode)
    except OSError as e:
        raise FileAllocationError(e.errno, f"cannot create {path}: {e.strerror}") from e
    try:
        permissions.apply_to_fd(fd)
        if reserve:
            os.posix_fallocate(fd, 0, length)
        else:
            os.ftruncate(fd, length)
    except BaseException as e:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        if not isinstance(e, OSError):
            raise
        if e.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            free = free_bytes(path.parent)
            available = "" if free is None else f", {free} bytes free"
            raise FileAllocationError(
                e.errno,
                f"no space for {path}: it needs {length} bytes ({e.strerror}{available}); free space on "
                "that file system or choose smaller terms (term-length, aeron.term.buffer.length)",
            ) from e
        raise FileAllocationError(e.errno, f"cannot allocate {length} bytes for {path}: {e.strerror}") from e
    return fd


_KEEP_DIR_ERRNOS = (errno.EBUSY, errno.EACCES, errno.EPERM, errno.EROFS)
"""Why a directory whose contents are gone may still not be removable: a mount point (a tmpfs, a container's
memory-backed volume, a bind mount) or a parent this user may not write."""


def mount_points() -> frozenset[str]:
    """Every mount point of this process's mount namespace (bind mounts within one file system too, which
    ``os.path.ismount`` cannot see)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return frozenset()
    # Field 5 is the mount point, with spaces and the like escaped as octal (\040).
    return frozenset(
        fields[4].encode().decode("unicode_escape") for fields in map(str.split, lines) if len(fields) > 4
    )


def is_mount_point(path: Path) -> bool:
    return os.path.ismount(path) or os.path.realpath(path) in mount_points()


def _remove_entry(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def remove_dir(directory: Path, owned: Callable[[str], bool]) -> bool:
    """Remove ``directory`` and what is in it, as Aeron does with its dirs; one that cannot itself go (a mount
    point, or a parent this user may not write) is kept: then only the entries whose names ``owned`` accepts go
    and the directory stays, to be used again. Returns whether the directory itself went.

    Raises OSError for an entry that cannot be removed."""
    if not directory.exists():
        return True
    if is_mount_point(directory) or not os.access(directory.parent, os.W_OK):
        clear_owned(directory, owned)
        return False
    shutil.rmtree(directory, onerror=_keep_top(directory))
    return not directory.exists()


def clear_owned(directory: Path, owned: Callable[[str], bool]) -> None:
    """Remove the entries of ``directory`` whose names ``owned`` accepts; the rest, and the directory, stay."""
    for entry in sorted(os.listdir(directory)):
        if owned(entry):
            _remove_entry(directory / entry)


def _keep_top(directory: Path) -> Callable[[Callable[..., object], str, object], None]:
    def on_error(function: Callable[..., object], path: str, exc_info: object) -> None:
        error = exc_info[1] if isinstance(exc_info, tuple) else exc_info
        # Everything inside went; the directory itself cannot (a mount point ismount could not see).
        if function is os.rmdir and path == str(directory) and getattr(error, "errno", None) in _KEEP_DIR_ERRNOS:
            return
        raise error  # type: ignore[misc]

    return on_error


def permission_denied(path: str | os.PathLike[str] | None) -> str:
    """The one wording of a refused access to the driver's or the archive's files, for every command and the
    client: the cause (whose files they are) and the fix, in one line."""
    where = f" on {path}" if path else ""
    return (
        f"permission denied{where}: the driver's and the archive's dirs and files are private to the user that "
        "runs them; run this as that user, or start them with -Daeron.dir.group=<a group of this user> "
        "(group read-write; docs/getting-started.md, 'Sharing the aeron dir')"
    )


def describe_os_error(error: OSError) -> str:
    """An OSError as a user reads it: the file and the cause, without errno numbers (a permission refusal as
    ``permission_denied`` words it)."""
    if isinstance(error, PermissionError):
        return permission_denied(error.filename)
    cause = error.strerror or str(error)
    return f"{error.filename}: {cause}" if error.filename else cause
