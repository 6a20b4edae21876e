"""The record & replay web page (docs/service.md section 8) in a real headless chromium: served by the service
with nothing from elsewhere; a recording started from the page counts up, stops, and its data set replays."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from harness.wait import wait_for
from tests.support.browser import Browser, unavailable
from tests.support.service_env import Publisher, Receiver, ServiceEnv


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """One chromium for the module (it takes seconds to start); each test opens the page afresh."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    b = Browser.start(tmp_path_factory.mktemp("browser"))
    try:
        yield b
    finally:
        b.close()


def owner_address(env: ServiceEnv) -> str:
    """The page's address as the service's owner gets it: ``mediadriver page`` reads the token the service wrote
    in its archive dir and puts it in the fragment."""
    done = subprocess.run(
        [sys.executable, "-m", "driver", "page", "--url", env.url, "--archive-dir", str(env.archive_dir)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_page_and_its_files_come_from_the_service(service_env: ServiceEnv) -> None:
    client = service_env.client
    root = client.get("/", follow_redirects=False)
    assert root.status_code in (302, 307) and root.headers["location"] == "/ui/"
    page = client.get("/ui/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    for asset, kind in (("app.js", "javascript"), ("style.css", "text/css")):
        answer = client.get(f"/ui/{asset}")
        assert answer.status_code == 200 and kind in answer.headers["content-type"]
        # Nothing is loaded from another machine.
        assert "http://" not in answer.text and "https://" not in answer.text and "//cdn" not in answer.text
    assert "http://" not in page.text and "https://" not in page.text


@pytest.mark.slow  # a browser
def test_record_from_the_page_watch_it_count_stop_it_and_replay_it(
    service_env: ServiceEnv, browser: Browser
) -> None:
    env = service_env
    publisher = Publisher(env, "aeron:ipc", 1001, 0.002)
    publisher.start()
    try:
        browser.open(f"{env.url}/")  # without the token: the API refuses the page
        message = browser.wait_text("#error", bool, what="the 401")
        assert message.startswith("401 ") and browser.text("#connection") == "offline"
        browser.open(owner_address(env))
        browser.wait_text("#connection", lambda t: t == "online", what="the page to reach the API")
        assert browser.run("return location.hash") == ""  # the token left the address bar
        browser.type_into("#rec-streams", "aeron:ipc 1001")
        browser.type_into("#rec-duration", "60")
        browser.type_into("#rec-name", "from the page")
        browser.click("#rec-start")
        browser.wait_text("#record-state", lambda t: t == "running", what="the recording to run")
        first = int(
            browser.wait_text("#record-messages", lambda t: int(t.replace(",", "")) > 0).replace(",", "")
        )
        later = browser.wait_text(
            "#record-messages", lambda t: int(t.replace(",", "")) > first + 50, what="the count to rise"
        )
        assert int(later.replace(",", "")) > first
        browser.click("#rec-stop")
        browser.wait_text("#record-state", lambda t: t == "cancelled", what="the recording to stop")
    finally:
        publisher.stop()
    dataset = env.client.get("/api/v1/datasets").json()["datasets"][0]
    assert dataset["name"] == "from the page" and dataset["messages"] > first
    # The page lists it with its size and span, and offers it for replay.
    row = browser.wait_text(
        f'#datasets tr[data-id="{dataset["id"]}"]', lambda t: "from the page" in t, timeout_s=5
    )
    assert f"{dataset['messages']:,}" in row and f"{dataset['span_s']:.3f} s" in row
    assert browser.run("return document.getElementById('replay-dataset').value") == dataset["id"]
    # Its message rate over time, a small chart: one point per bucket, drawn from GET .../rate.
    chart = f'#datasets tr[data-id="{dataset["id"]}"] canvas.rate'
    wait_for(lambda: browser.run(f"return document.querySelector('{chart}') !== null"), 5, "the rate chart")
    assert browser.run(f"return document.querySelector('{chart}').dataset.points") == "60"

    receiver = Receiver(env, "aeron:ipc", 2001)
    try:
        browser.type_into("#replay-rate", "20")
        browser.type_into("#replay-repeat", "2")
        browser.type_into("#replay-stream", "2001")
        browser.click("#replay-start")
        browser.wait_text("#replay-state", lambda t: t == "done", timeout_s=30, what="the replay to end")
        assert browser.text("#replay-repeats") == "2/2"
        assert browser.text("#replay-messages") == f"{2 * dataset['messages']:,}"
        wait_for(lambda: len(receiver.received) >= 2 * dataset["messages"], 5, "the replayed messages")
    finally:
        receiver.close()
    assert browser.text("#error") == ""


@pytest.mark.slow  # a browser
def test_the_page_shows_the_apis_error(service_env: ServiceEnv, browser: Browser) -> None:
    browser.open(owner_address(service_env))
    browser.wait_text("#connection", lambda t: t == "online", what="the page to reach the API")
    browser.type_into("#rec-streams", "aeron:ipc 1001")
    browser.run(
        "document.getElementById('rec-duration').value = ''; document.getElementById('rec-count').value = ''"
    )
    browser.click("#rec-start")
    message = browser.wait_text("#error", bool, what="the error")
    assert message.startswith("422 ") and "duration_s or max_messages is required" in message
    assert service_env.client.get("/api/v1/record").json()["state"] == "idle"


@pytest.mark.slow  # a browser
def test_a_rolling_capture_from_the_page_shows_its_cuts(service_env: ServiceEnv, browser: Browser) -> None:
    env = service_env
    publisher = Publisher(env, "aeron:ipc", 1001, 0.0005)
    publisher.start()
    try:
        browser.open(owner_address(env))
        browser.wait_text("#connection", lambda t: t == "online", what="the page to reach the API")
        assert not browser.run("return document.getElementById('record-rolling').hidden === false")
        browser.type_into("#rec-streams", "aeron:ipc 1001")
        browser.type_into("#rec-rotate-bytes", "65536")
        browser.type_into("#rec-name", "ring")
        browser.click("#rec-start")
        cuts = browser.wait_text(
            "#record-rolling",
            lambda t: t.split(" cut")[0].isdigit() and int(t.split(" cut")[0]) >= 2,
            timeout_s=30,
            what="two cuts on the page",
        )
        assert " dropped; now #" in cuts and "messages" in cuts
        browser.click("#rec-stop")
        browser.wait_text("#record-state", lambda t: t == "cancelled", what="the capture to stop")
    finally:
        publisher.stop()
    names = [d["name"] for d in env.client.get("/api/v1/datasets").json()["datasets"]]
    assert "ring-0001" in names and "ring-0002" in names
