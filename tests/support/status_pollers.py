"""Concurrent HTTP clients in a process of their own: ``python -m tests.support.status_pollers URL PATH CLIENTS
INTERVAL_S [TOKEN_FILE]`` (the service's token file, as its owner's CLI reads it) runs CLIENTS clients that each GET URL+PATH every INTERVAL_S until the answer says
``"running": false`` and it has made at least MIN_REQUESTS requests (a fast job must not make the load too light
to count); prints "polling" once every client has had an answer, and at the end one JSON line:
{"requests": n, "running": answers that said running, "statuses": {code: n}, "failures": [...]}."""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from pathlib import Path

import httpx

MIN_REQUESTS = 3


async def main(url: str, path: str, clients: int, interval_s: float, token: str | None = None) -> dict:
    statuses: Counter[int] = Counter()
    running = 0
    failures: list[str] = []

    answered: set[int] = set()

    async def poll(client: httpx.AsyncClient, n: int) -> None:
        nonlocal running
        made = 0
        while True:
            made += 1
            try:
                response = await client.get(path)
                statuses[response.status_code] += 1
                if n not in answered:
                    answered.add(n)
                    if len(answered) == clients:
                        print("polling", flush=True)
                if response.status_code != 200:
                    failures.append(response.text[:200])
                elif response.json()["running"]:
                    running += 1
                elif made >= MIN_REQUESTS:
                    return
            except httpx.HTTPError as e:
                failures.append(repr(e))
                if len(failures) > 100:
                    return
            await asyncio.sleep(interval_s)

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits, headers=headers) as client:
        await asyncio.gather(*(poll(client, n) for n in range(clients)))
    return {
        "requests": sum(statuses.values()),
        "running": running,
        "statuses": dict(statuses),
        "failures": failures[:5],
    }


if __name__ == "__main__":
    url, path, clients, interval = sys.argv[1:5]
    token = Path(sys.argv[5]).read_text().strip() if len(sys.argv) > 5 else None
    print(json.dumps(asyncio.run(main(url, path, int(clients), float(interval), token))), flush=True)
