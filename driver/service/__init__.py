"""The record & replay service (docs/service.md): an HTTP API on the driver's loop that records streams into
data sets (archive recordings plus a JSON manifest), replays them paced by the archive, lists, deletes, exports
and imports them.

``RecordReplayService`` (service.py) holds the jobs and the archive connection; ``create_app`` (app.py) is the
FastAPI application over it; ``serve_http`` (server.py) runs it with uvicorn on the running loop.
"""

from driver.service.app import create_app
from driver.service.server import HttpService, HttpSettings, serve_http, start_http
from driver.service.service import RecordReplayService, ServiceError

__all__ = [
    "HttpService",
    "HttpSettings",
    "RecordReplayService",
    "ServiceError",
    "create_app",
    "serve_http",
    "start_http",
]
