"""The record & replay service (docs/service.md): an HTTP API on the driver's loop that records streams into
data sets (archive recordings plus a JSON manifest), replays them paced by the archive, lists, deletes, exports
and imports them.

``RecordReplayService`` (service.py) holds the jobs and the archive connection; ``create_app`` (app.py) is the
FastAPI application over it; ``serve_http`` (server.py) runs it with uvicorn on the running loop.
"""

import importlib
from typing import Any

# Imported on first use (PEP 562): the CLI registers `serve` from driver.service.command on every run, and must
# neither pay for FastAPI nor need the `service` extra for that.
_EXPORTS = {
    "create_app": "driver.service.app",
    "HttpService": "driver.service.server",
    "HttpSettings": "driver.service.server",
    "serve_http": "driver.service.server",
    "start_http": "driver.service.server",
    "RecordReplayService": "driver.service.service",
    "ServiceError": "driver.service.service",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


__all__ = [
    "HttpService",
    "HttpSettings",
    "RecordReplayService",
    "ServiceError",
    "create_app",
    "serve_http",
    "start_http",
]
