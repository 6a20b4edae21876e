"""A real headless browser for page tests: Debian's chromium driven by its chromedriver over the W3C WebDriver
protocol (plain JSON over HTTP, spoken with httpx: no browser automation library to install).

``Browser.start(tmp_path)`` starts chromedriver on a free loopback port and a chromium session with a fresh
profile; ``find``, ``click``, ``type_into``, ``text`` and ``run`` act on the page; ``close()`` ends both.
``unavailable()`` says why no browser can run here (None when one can)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx

from harness.ports import free_port
from harness.wait import wait_for

CHROMIUM = "/usr/bin/chromium"
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
)


def unavailable() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is not installed (make system-deps installs Debian's chromium)"
    if shutil.which("chromedriver") is None:
        return "chromedriver is not installed (make system-deps installs Debian's chromium-driver)"
    return None


class Browser:
    def __init__(self, proc: subprocess.Popen, client: httpx.Client, session: str) -> None:
        self.proc, self.client, self.session = proc, client, session

    @classmethod
    def start(cls, tmp_path: Path) -> Browser:
        port = free_port("tcp")
        proc = subprocess.Popen(
            [shutil.which("chromedriver") or "chromedriver", f"--port={port}", "--allowed-ips=127.0.0.1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
        try:

            def ready() -> bool:
                try:
                    return client.get("/status").json()["value"]["ready"]
                except httpx.HTTPError:
                    return False

            wait_for(ready, 30, "chromedriver to listen", interval=0.1)
            profile = tmp_path / "chromium-profile"
            profile.mkdir()
            options = {"binary": CHROMIUM, "args": [*FLAGS, f"--user-data-dir={profile}"]}
            answer = client.post(
                "/session",
                json={"capabilities": {"alwaysMatch": {"goog:chromeOptions": options}}},
            ).json()["value"]
            if "sessionId" not in answer:
                raise RuntimeError(f"chromium did not start: {answer}")
        except BaseException:
            client.close()
            proc.kill()
            proc.wait()
            raise
        return cls(proc, client, answer["sessionId"])

    def _call(self, method: str, path: str, body: dict | None = None) -> Any:
        response = self.client.request(method, f"/session/{self.session}{path}", json=body)
        value = response.json()["value"]
        if response.status_code != 200:
            raise AssertionError(f"webdriver {method} {path}: {value.get('message', value)}")
        return value

    def open(self, url: str) -> None:
        self._call("POST", "/url", {"url": url})

    def find(self, css: str) -> str:
        return self._call("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def click(self, css: str) -> None:
        self._call("POST", f"/element/{self.find(css)}/click", {})

    def type_into(self, css: str, text: str) -> None:
        """Replace the field's text with ``text``, as typed."""
        element = self.find(css)
        self._call("POST", f"/element/{element}/clear", {})
        self._call("POST", f"/element/{element}/value", {"text": text})

    def text(self, css: str) -> str:
        return self._call("GET", f"/element/{self.find(css)}/text")

    def run(self, script: str, *args: Any) -> Any:
        return self._call("POST", "/execute/sync", {"script": script, "args": list(args)})

    def wait_text(self, css: str, predicate, timeout_s: float = 20.0, what: str = "") -> str:
        """Poll the element's text until ``predicate(text)``; returns that text."""
        seen = ""

        def check() -> bool:
            nonlocal seen
            seen = self.text(css)
            return bool(predicate(seen))

        try:
            wait_for(check, timeout_s, what or f"{css} to change", interval=0.1)
        except Exception as e:
            raise AssertionError(f"{what or css}: last text {seen!r}") from e
        return seen

    def close(self) -> None:
        try:
            self.client.delete(f"/session/{self.session}")
        except httpx.HTTPError:
            pass
        finally:
            self.client.close()
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
