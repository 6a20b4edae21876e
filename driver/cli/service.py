"""``mediadriver record``, ``replay``, ``datasets`` and ``page``: the record & replay service's API from the command
line (docs/service.md section 7); ``serve``, which runs the service, is serve.py's.

Plain HTTP with the standard library (urllib), so these commands need neither the ``service`` extra nor anything
else beyond the driver's own dependencies. Errors print the API's JSON ``error`` and exit 1; ``--wait`` polls the
job's status and rewrites one line in place until it ends; export and import show the bytes transferred.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from driver.cli.common import COMMAND_HELP, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, fail
from driver.service.token_file import TOKEN_ENV, read_token, token_path
from driver.util.files import describe_os_error

DEFAULT_URL = "http://127.0.0.1:8080"  # `mediadriver serve`'s default port
DEFAULT_ARCHIVE_DIR = "aeron-archive"  # the archive's default (aeron.archive.dir)
API = "/api/v1"
CHUNK = 1 << 20
POLL_S = 0.2


class ApiError(Exception):
    """The service answered with an error, or could not be reached: ``str()`` says which and why."""


class ServiceClient:
    """The API over urllib: JSON in and out, bearer token when given."""

    def __init__(
        self, url: str, token: str | None = None, timeout_s: float = 30.0, token_hint: str = ""
    ) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self.token_hint = token_hint

    def _request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ):
        url = self.url + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        all_headers = dict(headers or {})
        if self.token:
            all_headers["Authorization"] = f"Bearer {self.token}"
        data = body
        if body is not None and not hasattr(body, "read"):
            data = json.dumps(body).encode()
            all_headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=all_headers)
        try:
            return urllib.request.urlopen(request, timeout=self.timeout_s)
        except urllib.error.HTTPError as e:
            hint = f" ({self.token_hint})" if e.code == 401 and self.token_hint else ""
            raise ApiError(_error_message(e) + hint) from None
        except urllib.error.URLError as e:
            raise ApiError(f"cannot reach the service at {self.url}: {e.reason}") from None
        except OSError as e:
            raise ApiError(f"cannot reach the service at {self.url}: {e}") from None

    def call(self, method: str, path: str, body: Any = None) -> Any:
        with self._request(method, API + path, body=body) as response:
            return json.loads(response.read() or b"null")

    def download(self, path: str, query: dict[str, str]):
        """The open response of a streamed GET (the caller reads and closes it)."""
        return self._request("GET", API + path, query=query)

    def upload(self, path: str, source: BinaryIO, length: int, query: dict[str, str]) -> Any:
        headers = {"Content-Length": str(length), "Content-Type": "application/octet-stream"}
        with self._request("POST", API + path, body=source, query=query, headers=headers) as response:
            return json.loads(response.read())


def _error_message(e: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(e.read() or b"{}")
    except ValueError:
        body = {}
    message = body.get("error") if isinstance(body, dict) else None
    return f"{e.code} {e.reason}: {message}" if message else f"{e.code} {e.reason}"


# -- formatting ---------------------------------------------------------------------------------------------------


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover - the loop returns


def record_line(status: dict, max_messages: int | None = None, duration_s: float | None = None) -> str:
    messages = f"{status['messages']:,}" + (f"/{max_messages:,}" if max_messages else "")
    elapsed = f"{status['duration_s']:.1f}" + (f"/{duration_s:g}" if duration_s else "")
    line = (
        f"recording {status.get('dataset_id') or '-'} {status['state']}: {messages} messages, "
        f"{human_bytes(status['bytes'])}, {elapsed} s"
    )
    if rolling := status.get("rolling"):
        line += (
            f", data set {rolling['dataset_seq']} ({human_bytes(rolling['dataset_bytes'])}), "
            f"{rolling['datasets_cut']} cut, {rolling['datasets_dropped']} dropped"
        )
    return line + (f" ({status['error']})" if status.get("error") else "")


def replay_line(status: dict) -> str:
    line = (
        f"replay {status.get('dataset_id') or '-'} {status['state']}: {status['messages']:,} messages, "
        f"{human_bytes(status['bytes'])}, {status['duration_s']:.1f} s, "
        f"round {status['repeats_done']}/{status['repeat']} done"
    )
    return line + (f" ({status['error']})" if status.get("error") else "")


class Progress:
    """One line rewritten in place (``\\r`` and clear-to-end) on a terminal; on anything else a line per change,
    at most one a second, so logs stay readable."""

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self._last = ""
        self._last_at = 0.0

    def show(self, line: str, force: bool = False) -> None:
        if line == self._last:
            return
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r" + line + "\033[K")
        elif force or now - self._last_at >= 1.0:
            self.stream.write(line + "\n")
        else:
            return
        self._last, self._last_at = line, now
        self.stream.flush()

    def done(self, line: str) -> None:
        if self.tty:
            self.stream.write("\r" + line + "\033[K\n")
        elif line != self._last:
            self.stream.write(line + "\n")
        self.stream.flush()
        self._last = line


# -- commands -----------------------------------------------------------------------------------------------------


def archive_dir_of(args: argparse.Namespace, properties: dict[str, str]) -> Path:
    return Path(
        getattr(args, "archive_dir", None)
        or properties.get("aeron.archive.dir")
        or os.environ.get("AERON_ARCHIVE_DIR")
        or DEFAULT_ARCHIVE_DIR
    )


def _client(args: argparse.Namespace, properties: dict[str, str]) -> ServiceClient:
    """The token from ``--token-file``, else ``$MEDIADRIVER_HTTP_TOKEN``, else the file the service wrote in its
    archive dir (``--archive-dir``, else ``-Daeron.archive.dir``, else ./aeron-archive): the owner's CLI needs
    nothing more."""
    if args.token_file:
        return ServiceClient(args.url, read_token(args.token_file))
    if token := os.environ.get(TOKEN_ENV):
        return ServiceClient(args.url, token)
    path = token_path(archive_dir_of(args, properties))
    hint = f"no token in {path}: give --archive-dir of the service, or --token-file"
    try:
        return ServiceClient(args.url, read_token(path), token_hint=f"with the token of {path}")
    except FileNotFoundError:
        return ServiceClient(args.url, None, token_hint=hint)


def _run(args: argparse.Namespace, properties: dict[str, str], body: Callable[[ServiceClient], int]) -> int:
    try:
        client = _client(args, properties)
    except OSError as e:
        return fail(f"cannot read the token file: {describe_os_error(e)}", EXIT_USAGE)
    try:
        return body(client)
    except ApiError as e:
        return fail(str(e))


def _wait(client: ServiceClient, job: str, render: Callable[[dict], str], interval_s: float = POLL_S) -> int:
    """Poll ``/<job>`` until it ends, one progress line; Ctrl-C cancels the job (DELETE) and waits for its end."""
    progress = Progress()
    status = client.call("GET", f"/{job}")
    try:
        while status["running"]:
            progress.show(render(status))
            time.sleep(interval_s)
            status = client.call("GET", f"/{job}")
    except KeyboardInterrupt:
        with contextlib.suppress(ApiError):
            status = client.call("DELETE", f"/{job}")
    progress.done(render(status))
    return EXIT_OK if status["state"] == "done" else EXIT_FAILURE


def _streams(pairs: list[list[str]] | None) -> list[dict]:
    streams = []
    for channel, stream_id in pairs or []:
        try:
            streams.append({"channel": channel, "stream_id": int(stream_id, 0)})
        except ValueError:
            raise SystemExit(
                fail(f"--stream {channel} {stream_id}: the stream id is not a number", EXIT_USAGE)
            ) from None
    return streams


def _filter(args: argparse.Namespace, kind: str) -> dict | None:
    body = {
        "stream_ids": getattr(args, f"{kind}_stream_id") or [],
        "channels": getattr(args, f"{kind}_channel") or [],
        "source_identities": getattr(args, f"{kind}_source") or [],
    }
    return body if any(body.values()) else None


def cmd_record_start(args: argparse.Namespace, properties: dict[str, str]) -> int:
    body: dict[str, Any] = {"streams": _streams(args.stream)}
    for key, value in (("duration_s", args.duration), ("max_messages", args.count), ("name", args.name)):
        if value is not None:
            body[key] = value
    for kind in ("include", "exclude"):
        if (f := _filter(args, kind)) is not None:
            body[kind] = f
    rotate = {
        k: v for k, v in (("every_s", args.rotate_every), ("every_bytes", args.rotate_bytes)) if v is not None
    }
    if rotate:
        body["rotate"] = rotate

    def run(client: ServiceClient) -> int:
        status = client.call("POST", "/record", body)
        if not args.wait:
            print(record_line(status), flush=True)
            return EXIT_OK
        return _wait(client, "record", lambda s: record_line(s, args.count, args.duration))

    return _run(args, properties, run)


def cmd_replay_start(args: argparse.Namespace, properties: dict[str, str]) -> int:
    body: dict[str, Any] = {"dataset_id": args.dataset_id, "rate": args.rate, "repeat": args.repeat}
    if args.stream:
        body["streams"] = _streams(args.stream)
    if args.start is not None or args.end is not None:
        body["time_range"] = {"start_s": args.start or 0.0, **({"end_s": args.end} if args.end else {})}
    for key, value in (
        ("channel", args.channel),
        ("stream_id", args.stream_id),
        ("max_idle_gap_s", args.max_idle_gap),
    ):
        if value is not None:
            body[key] = value

    def run(client: ServiceClient) -> int:
        status = client.call("POST", "/replay", body)
        if not args.wait:
            print(replay_line(status), flush=True)
            return EXIT_OK
        return _wait(client, "replay", replay_line)

    return _run(args, properties, run)


def _job_command(job: str, method: str, render: Callable[[dict], str]):
    def command(args: argparse.Namespace, properties: dict[str, str]) -> int:
        def run(client: ServiceClient) -> int:
            if getattr(args, "wait", False):
                return _wait(client, job, render)
            status = client.call(method, f"/{job}")
            print(
                json.dumps(status, indent=2) if getattr(args, "json", False) else render(status), flush=True
            )
            return EXIT_OK

        return _run(args, properties, run)

    return command


def render_datasets(datasets: list[dict]) -> str:
    rows = [("ID", "NAME", "MESSAGES", "SIZE", "SPAN", "STREAMS", "CREATED")]
    for d in datasets:
        streams = ", ".join(f"{s['channel']} {s['stream_id']}" for s in d["streams"])
        rows.append(
            (
                d["id"],
                d["name"],
                f"{d['messages']:,}",
                human_bytes(d["bytes"]),
                f"{d['span_s']:.3f} s",
                streams,
                d["created"],
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def cmd_datasets_list(args: argparse.Namespace, properties: dict[str, str]) -> int:
    def run(client: ServiceClient) -> int:
        datasets = client.call("GET", "/datasets")["datasets"]
        print(json.dumps(datasets, indent=2) if args.json else render_datasets(datasets), flush=True)
        return EXIT_OK

    return _run(args, properties, run)


def cmd_datasets_show(args: argparse.Namespace, properties: dict[str, str]) -> int:
    def run(client: ServiceClient) -> int:
        print(json.dumps(client.call("GET", f"/datasets/{_quote(args.dataset_id)}"), indent=2), flush=True)
        return EXIT_OK

    return _run(args, properties, run)


def cmd_datasets_delete(args: argparse.Namespace, properties: dict[str, str]) -> int:
    def run(client: ServiceClient) -> int:
        dataset = client.call("DELETE", f"/datasets/{_quote(args.dataset_id)}")
        print(f"deleted {dataset['id']} ({dataset['name']})", flush=True)
        return EXIT_OK

    return _run(args, properties, run)


def _quote(dataset_id: str) -> str:
    return urllib.parse.quote(dataset_id, safe="")


_FILENAME = re.compile(r'filename="([^"/\\]+)"')


def cmd_datasets_export(args: argparse.Namespace, properties: dict[str, str]) -> int:
    """Streamed to ``<file>.part`` and renamed once whole: an interrupted export leaves no file behind."""

    def run(client: ServiceClient) -> int:
        response = client.download(
            f"/datasets/{_quote(args.dataset_id)}/export", {"compression": args.compression}
        )
        with response:
            match = _FILENAME.search(response.headers.get("Content-Disposition", ""))
            target = Path(args.output or (match.group(1) if match else f"{args.dataset_id}.export"))
            if target.is_dir():
                target = target / (match.group(1) if match else f"{args.dataset_id}.export")
            part = target.with_name(target.name + ".part")
            progress = Progress(sys.stderr)
            done = 0
            try:
                with open(part, "wb") as out:
                    while chunk := response.read(CHUNK):
                        out.write(chunk)
                        done += len(chunk)
                        progress.show(f"exported {human_bytes(done)}")
                os.replace(part, target)
            except BaseException:
                part.unlink(missing_ok=True)
                raise
        progress.done(f"exported {human_bytes(done)} to {target}")
        print(target, flush=True)
        return EXIT_OK

    try:
        return _run(args, properties, run)
    except OSError as e:
        return fail(f"export failed: {e}")


class _CountingReader:
    """The upload's file, reporting progress as http.client reads it."""

    def __init__(self, f: BinaryIO, total: int, progress: Progress) -> None:
        self.f, self.total, self.progress, self.done = f, total, progress, 0

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(CHUNK if n is None or n < 0 else max(n, CHUNK))
        self.done += len(data)
        self.progress.show(f"imported {human_bytes(self.done)} of {human_bytes(self.total)}")
        return data


def cmd_datasets_import(args: argparse.Namespace, properties: dict[str, str]) -> int:
    path = Path(args.file)
    try:
        size = path.stat().st_size
    except OSError as e:
        return fail(f"cannot read {path}: {e.strerror or e}")

    def run(client: ServiceClient) -> int:
        progress = Progress(sys.stderr)
        query = {"filename": path.name, "on_conflict": "replace" if args.replace else "keep"}
        with open(path, "rb") as f:
            dataset = client.upload("/datasets/import", _CountingReader(f, size, progress), size, query)
        progress.done(f"imported {human_bytes(size)}")
        print(f"imported {dataset['id']} ({dataset['name']}): {dataset['messages']:,} messages", flush=True)
        return EXIT_OK

    return _run(args, properties, run)


def cmd_page(args: argparse.Namespace, properties: dict[str, str]) -> int:
    """The page's address for the owner: the token rides in the fragment (#token=), which the browser keeps to
    itself; the page moves it to the tab's session storage."""

    def run(client: ServiceClient) -> int:
        client.call("GET", "/status")  # the token is right (a 401 otherwise)
        address = f"{client.url}/ui/"
        if client.token:
            address += "#token=" + urllib.parse.quote(client.token, safe="")
        print(address, flush=True)
        if args.open:
            webbrowser.open(address)
        return EXIT_OK

    return _run(args, properties, run)


# -- parsers ------------------------------------------------------------------------------------------------------


def _common(parser: argparse.ArgumentParser, suppress: bool = False) -> None:
    """``--url``, ``--token-file`` and ``--archive-dir``; ``suppress`` on an action under a parser that has them too, so a value
    given before the action is not overwritten by the action's default."""
    parser.add_argument(
        "--url",
        default=argparse.SUPPRESS if suppress else DEFAULT_URL,
        help=f"the service (default {DEFAULT_URL})",
    )
    parser.add_argument(
        "--token-file",
        default=argparse.SUPPRESS if suppress else None,
        help=f"bearer token read from this file (default ${TOKEN_ENV}, else the service's own token file in "
        "--archive-dir; never the token itself on the command line)",
    )
    parser.add_argument(
        "--archive-dir",
        default=argparse.SUPPRESS if suppress else None,
        help=f"the service's archive dir, where it keeps its token (default -Daeron.archive.dir, else "
        f"./{DEFAULT_ARCHIVE_DIR})",
    )


def _stream_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument(
        "--stream", nargs=2, action="append", metavar=("CHANNEL", "STREAM_ID"), help=help_text
    )


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """record, replay, datasets and page (``serve`` is serve.py's)."""
    record = sub.add_parser("record", help=COMMAND_HELP["record"])
    record_sub = record.add_subparsers(dest="record_action", required=True, metavar="ACTION")
    start = record_sub.add_parser("start", help="start a recording (stop after --duration and/or --count)")
    _stream_option(start, "a stream to record (repeatable), e.g. --stream aeron:ipc 1001")
    start.add_argument("--duration", type=float, help="stop after this many seconds")
    start.add_argument("--count", type=int, help="stop after this many messages")
    start.add_argument("--name", help="the data set's name (default recording-<time>-<id>)")
    start.add_argument(
        "--rotate-every", type=float, metavar="S", help="a rolling capture: cut a data set every S seconds"
    )
    start.add_argument(
        "--rotate-bytes", type=int, metavar="N", help="a rolling capture: cut a data set every N bytes"
    )
    for kind in ("include", "exclude"):
        start.add_argument(f"--{kind}-stream-id", type=int, action="append", help=f"{kind} filter: stream id")
        start.add_argument(f"--{kind}-channel", action="append", help=f"{kind} filter: channel substring")
        start.add_argument(
            f"--{kind}-source", action="append", help=f"{kind} filter: source identity substring"
        )
    start.add_argument("--wait", action="store_true", help="show progress until it ends (Ctrl-C cancels it)")
    start.set_defaults(handler=cmd_record_start)
    status = record_sub.add_parser("status", help="the running or last recording")
    status.add_argument("--json", action="store_true")
    status.add_argument("--wait", action="store_true", help="follow it until it ends")
    status.set_defaults(handler=_job_command("record", "GET", record_line))
    stop = record_sub.add_parser("stop", help="stop the running recording (the data set keeps what it has)")
    stop.set_defaults(handler=_job_command("record", "DELETE", record_line))
    for p in (start, status, stop):
        _common(p)

    replay = sub.add_parser("replay", help=COMMAND_HELP["replay"])
    replay_sub = replay.add_subparsers(dest="replay_action", required=True, metavar="ACTION")
    start = replay_sub.add_parser(
        "start", help="replay a data set (or part of it) at a rate, a number of times"
    )
    start.add_argument("dataset_id", metavar="DATASET_ID")
    start.add_argument(
        "--rate", type=float, default=1.0, help="relative to the recorded timing (default 1.0)"
    )
    start.add_argument("--repeat", type=int, default=1, help="times to replay it (default 1)")
    _stream_option(start, "replay only this recorded stream (repeatable)")
    start.add_argument("--start", type=float, help="from this many seconds after the data set's start")
    start.add_argument("--end", type=float, help="up to this many seconds after the data set's start")
    start.add_argument("--channel", help="target channel (default: each recording's own)")
    start.add_argument("--stream-id", type=int, help="target stream id (default: each recording's own)")
    start.add_argument("--max-idle-gap", type=float, help="cap idle gaps at this many seconds")
    start.add_argument("--wait", action="store_true", help="show progress until it ends (Ctrl-C cancels it)")
    start.set_defaults(handler=cmd_replay_start)
    status = replay_sub.add_parser("status", help="the running or last replay")
    status.add_argument("--json", action="store_true")
    status.add_argument("--wait", action="store_true", help="follow it until it ends")
    status.set_defaults(handler=_job_command("replay", "GET", replay_line))
    stop = replay_sub.add_parser("stop", help="stop the running replay")
    stop.set_defaults(handler=_job_command("replay", "DELETE", replay_line))
    for p in (start, status, stop):
        _common(p)

    datasets = sub.add_parser("datasets", help=COMMAND_HELP["datasets"])
    ds_sub = datasets.add_subparsers(dest="datasets_action", metavar="ACTION")
    listing = ds_sub.add_parser("list", help="every data set: id, name, messages, size, span (the default)")
    listing.add_argument("--json", action="store_true", help="the API's JSON")
    show = ds_sub.add_parser("show", help="one data set's manifest (JSON)")
    show.add_argument("dataset_id", metavar="DATASET_ID")
    show.set_defaults(handler=cmd_datasets_show)
    delete = ds_sub.add_parser("delete", help="delete a data set and its recordings")
    delete.add_argument("dataset_id", metavar="DATASET_ID")
    delete.set_defaults(handler=cmd_datasets_delete)
    export = ds_sub.add_parser("export", help="download a data set as a file (tar, tar.gz or zip)")
    export.add_argument("dataset_id", metavar="DATASET_ID")
    export.add_argument("--compression", choices=("NONE", "ZIP", "GZIP"), default="GZIP")
    export.add_argument("-o", "--output", help="file or directory (default: the service's file name, here)")
    export.set_defaults(handler=cmd_datasets_export)
    imp = ds_sub.add_parser("import", help="upload an exported file as a new data set")
    imp.add_argument("file", metavar="FILE")
    imp.add_argument(
        "--replace",
        action="store_true",
        help="delete data sets of the same name once imported (default: keep)",
    )
    imp.set_defaults(handler=cmd_datasets_import)
    page = sub.add_parser("page", help=COMMAND_HELP["page"])
    page.add_argument("--open", action="store_true", help="and open it in a browser")
    _common(page)
    page.set_defaults(handler=cmd_page)
    _common(datasets)
    for p in (listing, show, delete, export, imp):
        _common(p, suppress=True)
    datasets.set_defaults(handler=cmd_datasets_list, json=False)
    listing.set_defaults(handler=cmd_datasets_list)
