"""Export and import of data sets (docs/service.md section 6)."""

from __future__ import annotations

from fastapi import FastAPI

from driver.service.service import RecordReplayService


def add_transfer_routes(app: FastAPI, service: RecordReplayService) -> None:
    pass
