"""The record & replay web page (docs/service.md section 8): static HTML, JavaScript and CSS from the package
(``driver/service/web/``), nothing from elsewhere. Served at ``/ui/`` outside the token check (the page itself
holds no data; its calls to ``/api/v1`` carry the token, which the owner's address from ``mediadriver page``
brings in its fragment, or the user types in)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

WEB_DIR = Path(__file__).with_name("web")
PAGE = "/ui"


def add_page_routes(app: FastAPI) -> None:
    app.mount(PAGE, StaticFiles(directory=WEB_DIR, html=True), name="ui")

    async def to_page(_request) -> RedirectResponse:
        return RedirectResponse(f"{PAGE}/")

    # A plain Starlette route: the application's token dependency is for the API's routes.
    app.router.add_route("/", to_page, methods=["GET"], include_in_schema=False)
