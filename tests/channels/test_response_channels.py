"""Response channels on a real driver with real sockets: each client opens its own answer path and gets only its
own answers; channels that cannot make a response channel are refused naming what is wrong."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from driver.client import Aeron, RegistrationError
from driver.protocol.control_protocol import ErrorCode
from harness.ports import free_port

DEADLINE_S = 10.0
REQUESTS, ANSWERS = 4001, 4002


@pytest.fixture
def aeron(embedded_driver) -> Iterator[Aeron]:
    driver = embedded_driver()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as client:
        yield client


def _until(done: Callable[[], object], step: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not done():
        assert time.monotonic() < deadline, f"no {what} within {DEADLINE_S} s"
        step()
        time.sleep(0.0005)


def test_two_clients_on_one_response_address_each_get_only_their_own_answers(aeron: Aeron) -> None:
    request_channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    control = f"127.0.0.1:{free_port()}"
    server_requests = aeron.add_subscription(request_channel, REQUESTS)
    clients = {}
    for name in ("alice", "bob"):
        answers = aeron.add_subscription(f"aeron:udp?control-mode=response|control={control}", ANSWERS)
        requests = aeron.add_publication(
            f"{request_channel}|response-correlation-id={answers.registration_id}", REQUESTS
        )
        clients[name] = (answers, requests)
    alice_session = clients["alice"][1].session_id
    assert alice_session != clients["bob"][1].session_id  # each request names its own answer path

    _until(lambda: len(server_requests.images) == 2, lambda: None, "request images")
    responders = {
        image.session_id: aeron.add_publication(
            f"aeron:udp?control-mode=response|control={control}|response-correlation-id={image.correlation_id}",
            ANSWERS,
        )
        for image in server_requests.images
    }
    received: dict[str, list[bytes]] = {name: [] for name in clients}
    for name, (answers, requests) in clients.items():
        _until(lambda a=answers, r=requests: a.is_connected and r.is_connected, lambda: None, f"{name}'s answer path")
        _until(lambda r=requests, n=name: r.offer(f"hello from {n}".encode()) > 0, lambda: None, "request sent")

    def serve() -> None:
        for image in server_requests.images:
            responder = responders[image.session_id]
            image.poll(lambda buffer, offset, length, _h, r=responder: _answer(r, buffer, offset, length), 10)

    for name, (answers, _requests) in clients.items():
        _until(
            lambda n=name: received[n],
            lambda a=answers, n=name: (serve(), a.poll(lambda b, o, ln, _h: received[n].append(b.get_bytes(o, ln)), 10)),
            f"{name}'s answer",
        )
    time.sleep(0.2)
    for answers, _requests in clients.values():
        answers.poll(lambda *_: pytest.fail("an answer for the other client"), 10)
    assert received == {"alice": [b"answer to hello from alice"], "bob": [b"answer to hello from bob"]}


def _answer(responder, buffer, offset: int, length: int) -> None:
    payload = b"answer to " + buffer.get_bytes(offset, length)
    deadline = time.monotonic() + DEADLINE_S
    while responder.offer(payload) <= 0:
        assert time.monotonic() < deadline, "answer back-pressured"
        time.sleep(0.0005)


def test_a_request_publication_must_name_an_existing_subscription(aeron: Aeron) -> None:
    with pytest.raises(RegistrationError, match="no subscription with registration id 987654"):
        aeron.add_publication(f"aeron:udp?endpoint=127.0.0.1:{free_port()}|response-correlation-id=987654", 1)


def test_a_response_publication_must_answer_an_image_that_asked(aeron: Aeron) -> None:
    control = f"control=127.0.0.1:{free_port()}"
    with pytest.raises(RegistrationError, match="needs response-correlation-id"):
        aeron.add_publication(f"aeron:udp?control-mode=response|{control}", 1)
    with pytest.raises(RegistrationError, match="no image has that correlation id"):
        aeron.add_publication(f"aeron:udp?control-mode=response|{control}|response-correlation-id=987654", 1)
    # An image of a plain publication (no response channel asked for) cannot be answered.
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    subscription = aeron.add_subscription(channel, 2)
    aeron.add_publication(channel, 2)
    _until(lambda: subscription.images, lambda: None, "image")
    image_id = subscription.images[0].correlation_id
    with pytest.raises(RegistrationError, match="did not ask for a response channel"):
        aeron.add_publication(f"aeron:udp?control-mode=response|{control}|response-correlation-id={image_id}", 2)


@pytest.mark.parametrize(
    ("channel", "message"),
    [
        ("aeron:ipc?control-mode=response", "control-mode=response is not supported on IPC"),
        ("aeron:ipc?response-correlation-id=1", "response-correlation-id is not supported on IPC"),
        ("aeron:udp?control-mode=response", "needs control=host:port"),
        ("aeron:udp?endpoint=127.0.0.1:40999|response-correlation-id=prototype", "prototype is not supported"),
        ("aeron:udp?endpoint=127.0.0.1:40999|response-correlation-id=x1", "must be a number of -1 or more"),
        ("aeron:udp?endpoint=127.0.0.1:40999|response-correlation-id=-5", "must be a number of -1 or more"),
    ],
)
def test_channels_that_cannot_make_a_response_channel_are_refused(aeron: Aeron, channel: str, message: str) -> None:
    with pytest.raises(RegistrationError, match=message) as info:
        aeron.add_publication(channel, 3)
    assert info.value.code in (ErrorCode.INVALID_CHANNEL, ErrorCode.GENERIC_ERROR)


def test_a_response_subscription_needs_the_servers_address(aeron: Aeron) -> None:
    with pytest.raises(RegistrationError, match="needs control=host:port"):
        aeron.add_subscription("aeron:udp?control-mode=response", 4)


def test_a_response_subscription_waits_for_its_server(aeron: Aeron) -> None:
    """Until a server's driver names its session, a response subscription takes no stream, not even one
    sent to its address on its stream id."""
    subscription = aeron.add_subscription(f"aeron:udp?control-mode=response|control=127.0.0.1:{free_port()}", 5)
    time.sleep(0.3)
    assert not subscription.images
    subscription.close()
