"""The HTTP API (docs/service.md section 2) as a FastAPI application over a RecordReplayService.

Every error is JSON ``{"error": "...", "detail": [...]}``: 422 names the bad field, 400 a body that is not JSON,
401 a missing or wrong bearer token, 404 an unknown data set, 405 a method the path lacks (with ``Allow``), 409 a
job already running, 413 a body too large, 507 an import the disk cannot hold. Request models are strict.
"""

from __future__ import annotations

import asyncio
import hmac

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from driver.service.models import (
    API,
    ERRORS,
    DataSet,
    DataSetList,
    RecordRequest,
    RecordStatus,
    ReplayList,
    ReplayRequest,
    ReplayStatus,
    ServiceStatus,
)
from driver.service.page import add_page_routes
from driver.service.rates import MessageRate, message_rate
from driver.service.service import RecordReplayService, ServiceError
from driver.service.transfer import add_transfer_routes

MAX_JSON_BODY = 1 << 20


def _error(
    status: int, message: str, detail: list | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    body: dict = {"error": message}
    if detail is not None:
        body["detail"] = detail
    return JSONResponse(body, status_code=status, headers=headers)


def _field(loc: tuple) -> str:
    return ".".join(str(p) for p in loc if p != "body") or "body"


class _JsonBodyLimit:
    """413 for a JSON body announced over ``max_bytes``, 411 for one not announced (chunked): the body is never
    read past the limit. Imports stream and count their own. A plain ASGI middleware: it costs a status poll next
    to nothing."""

    def __init__(self, app, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope, receive, send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] in ("POST", "PUT", "PATCH")
            and not scope["path"].endswith("/import")
        ):
            length = next((v for k, v in scope["headers"] if k == b"content-length"), None)
            response = None
            if length is None or not length.isdigit():
                response = _error(411, "a JSON body needs a Content-Length")
            elif int(length) > self.max_bytes:
                response = _error(413, f"request body over {self.max_bytes} bytes")
            if response is not None:
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(
    service: RecordReplayService, *, token: str | None = None, max_json_body: int = MAX_JSON_BODY
) -> FastAPI:
    """The application; ``token`` (when given) is required as ``Authorization: Bearer <token>`` on every API
    route; JSON bodies over ``max_json_body`` bytes are refused with 413."""

    # Declared as the OpenAPI bearer scheme (so /docs can send it and fuzzers know it); checked here, in
    # constant time, with our own 401.
    BEARER = Depends(
        HTTPBearer(auto_error=False, description="the service's token (docs/service.md section 1)")
    )

    def check_token(request: Request, _scheme: HTTPAuthorizationCredentials | None = BEARER) -> None:
        if token is None:
            return
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            raise ServiceError(401, "missing or wrong bearer token (Authorization: Bearer <token>)")

    app = FastAPI(
        title="aio-media-driver record & replay",
        version="1",
        description="Record streams into data sets, replay them at any rate, export and import them.",
        dependencies=[Depends(check_token)] if token is not None else [],
    )
    app.state.service = service

    app.add_middleware(_JsonBodyLimit, max_bytes=max_json_body)

    @app.exception_handler(ServiceError)
    async def on_service_error(_request: Request, e: ServiceError) -> JSONResponse:
        return _error(e.status, e.message)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(_request: Request, e: RequestValidationError) -> JSONResponse:
        errors = e.errors()
        detail = [
            {
                "field": _field(tuple(err.get("loc", ()))),
                "message": err.get("msg", ""),
                "type": err.get("type", ""),
            }
            for err in errors
        ]
        if any(err.get("type") == "json_invalid" for err in errors):
            return _error(
                400, f"malformed JSON: {errors[0].get('ctx', {}).get('error', 'cannot parse')}", detail
            )
        message = "; ".join(f"{d['field']}: {d['message']}" for d in detail)
        return _error(422, message, detail)

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, e: StarletteHTTPException) -> JSONResponse:
        headers = e.headers
        if e.status_code == 405:  # every method of the path (one route per method: the router names one)
            path = request.url.path
            matching = [
                r for r in app.routes if isinstance(r, Route) and r.methods and r.path_regex.match(path)
            ]
            # A path of its own (/datasets/import) is not also one of a template's (/datasets/{dataset_id}).
            matching = [r for r in matching if not r.param_convertors] or matching
            allowed = {m for r in matching for m in r.methods or ()}
            headers = {**(headers or {}), "Allow": ", ".join(sorted(allowed))}
        return _error(e.status_code, str(e.detail), headers=headers)

    @app.post(f"{API}/record", response_model=RecordStatus, status_code=202, responses=ERRORS)
    async def start_record(body: RecordRequest) -> RecordStatus:
        return service.start_record(body)

    # Status is what clients poll: answered with the model's JSON directly (no second validation pass), so
    # many pollers cost the driver's loop little.
    @app.get(f"{API}/record", response_model=RecordStatus, responses=ERRORS)
    async def record_status() -> Response:
        return Response(service.record_status().model_dump_json(), media_type="application/json")

    @app.delete(f"{API}/record", response_model=RecordStatus, responses=ERRORS)
    async def cancel_record() -> RecordStatus:
        return await service.cancel_record()

    @app.get(f"{API}/status", response_model=ServiceStatus, responses=ERRORS)
    async def status() -> Response:
        both = ServiceStatus(record=service.record_status(), replay=service.replay_status())
        return Response(both.model_dump_json(), media_type="application/json")

    @app.post(f"{API}/replay", response_model=ReplayStatus, status_code=202, responses=ERRORS)
    async def start_replay(body: ReplayRequest) -> ReplayStatus:
        return service.start_replay(body)

    @app.get(f"{API}/replay", response_model=ReplayStatus, responses=ERRORS)
    async def replay_status() -> Response:
        return Response(service.replay_status().model_dump_json(), media_type="application/json")

    @app.delete(f"{API}/replay", response_model=ReplayStatus, responses=ERRORS)
    async def cancel_replay() -> ReplayStatus:
        return await service.cancel_replay()

    @app.get(f"{API}/replays", response_model=ReplayList, responses=ERRORS)
    async def list_replays() -> ReplayList:
        """Every running replay and the last ones ended, oldest first."""
        return ReplayList(replays=[job.status() for job in service.replays.values()])

    @app.get(f"{API}/replays/{{replay_id}}", response_model=ReplayStatus, responses=ERRORS)
    async def get_replay(replay_id: str) -> Response:
        status = service.get_replay(replay_id).status()
        return Response(status.model_dump_json(), media_type="application/json")

    @app.delete(f"{API}/replays/{{replay_id}}", response_model=ReplayStatus, responses=ERRORS)
    async def cancel_replay_id(replay_id: str) -> ReplayStatus:
        return await service.cancel_replay_id(replay_id)

    @app.get(f"{API}/datasets", response_model=DataSetList, responses=ERRORS)
    async def list_datasets() -> DataSetList:
        return DataSetList(datasets=service.store.list())

    @app.get(f"{API}/datasets/{{dataset_id}}", response_model=DataSet, responses=ERRORS)
    async def get_dataset(dataset_id: str) -> DataSet:
        return service.get_dataset(dataset_id)

    @app.get(f"{API}/datasets/{{dataset_id}}/rate", response_model=MessageRate, responses=ERRORS)
    async def dataset_rate(dataset_id: str, buckets: int = Query(default=60, ge=1, le=1000)) -> MessageRate:
        """Messages recorded per time bucket over the data set's span (from the recordings' indexes)."""
        dataset = service.get_dataset(dataset_id)
        return await asyncio.to_thread(message_rate, service.archive_dir, dataset, buckets)

    @app.delete(f"{API}/datasets/{{dataset_id}}", response_model=DataSet, responses=ERRORS)
    async def delete_dataset(dataset_id: str) -> DataSet:
        return await service.delete_dataset(dataset_id)

    add_transfer_routes(app, service)
    add_page_routes(app)
    return app
