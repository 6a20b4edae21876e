"""One side of tools/bench/python_clients.py: a Python publisher or subscriber, ours or pyaeron's.

    python -m tools.bench.python_clients_peer pub CLIENT MODE IDLE AERON_DIR CHANNEL STREAM_ID SECONDS LENGTH
    python -m tools.bench.python_clients_peer sub CLIENT MODE IDLE AERON_DIR CHANNEL STREAM_ID SECONDS

CLIENT is ``ours`` (this checkout's driver.client) or ``pyaeron`` (nothing from this repository is imported
then but the empty ``tools`` package files); python_clients.py runs both on the Python 3.12 venv harness/install.py makes.
MODE: ``message`` (offer / poll(handler), one call per message), ``batch`` (ours: ``offer_many`` /
``poll_batch``), ``asyncio`` (ours: ``offer_async`` / ``async for ... in subscription.messages()``, one await
per message), ``asyncio-batch`` (ours: ``aio.offer_many`` / ``async for ... in subscription.fragment_batches()``,
one await per batch). The asyncio modes run on ``aio.run`` (uvloop).

IDLE, for the ``message`` and ``batch`` loops: ``busy-spin`` (offer and poll again at once) or ``backoff``
(each client's own backoff idle strategy with Agrona's defaults: 10 spins, 5 yields, then parks of 1 us
doubling to 1 ms). The subscriber calls ``idle(fragments)`` after every poll; the publisher ``idle()`` after
every refused offer and ``idle(sent)`` after every 256 offers (16 ``offer_many`` calls).

Both print ``READY`` once connected, then, once the first message has gone or arrived, sample
(monotonic time, messages so far, process CPU seconds) about every 0.1 s for SECONDS, and print one line
``RESULT {json}`` with the samples. The publisher keeps offering until it is stopped.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

BATCH = 64  # messages per offer_many call
FRAGMENT_LIMIT = 256
SAMPLE_S = 0.1


class Sampler:
    """Samples (time, count, cpu) when asked at most every SAMPLE_S; cheap to call often."""

    __slots__ = ("end", "next", "samples")

    def __init__(self, seconds: float) -> None:
        now = time.monotonic()
        self.samples: list[tuple[float, int, float]] = [(now, 0, time.process_time())]
        self.next = now + SAMPLE_S
        self.end = now + seconds

    def sample(self, count: int) -> bool:
        """Record a sample if one is due; False once SECONDS have passed."""
        now = time.monotonic()
        if now < self.next:
            return True
        self.samples.append((now, count, time.process_time()))
        self.next = now + SAMPLE_S
        return now < self.end


IDLE_NAMES = ("busy-spin", "backoff")
BACKOFF = {"max_spins": 10, "max_yields": 5, "min_park_ns": 1_000, "max_park_ns": 1_000_000}


def ours_idle(name: str) -> Callable[..., None] | None:
    """The ``idle`` of our backoff strategy; None to spin."""
    from driver.client import BackoffIdleStrategy

    return None if name == "busy-spin" else BackoffIdleStrategy(**BACKOFF).idle


def pyaeron_idle(name: str) -> Callable[..., None] | None:
    import pyaeron

    return None if name == "busy-spin" else pyaeron.IdleStrategy.backoff(**BACKOFF).idle


def publish(offer: Callable[[bytes], int], payload: bytes, seconds: float, idle) -> Sampler:
    """Offer ``payload`` one call at a time (ours: a position > 0, or a negative code)."""
    while offer(payload) <= 0:
        pass
    sampler = Sampler(seconds)
    sample = sampler.sample
    sent = 1
    while True:
        before = sent
        if idle is None:
            for _ in range(256):
                if offer(payload) > 0:
                    sent += 1
        else:
            for _ in range(256):
                if offer(payload) > 0:
                    sent += 1
                else:
                    idle()
            idle(sent - before)
        if not sample(sent):
            return sampler


def subscribe(poll: Callable[[Any, int], int], on_fragment, seconds: float, idle) -> Sampler:
    """Poll until the first message, then sample for ``seconds``."""
    received = 0
    while received == 0:
        received = poll(on_fragment, FRAGMENT_LIMIT)
    sampler = Sampler(seconds)
    sample = sampler.sample
    if idle is None:
        while sample(received):
            received += poll(on_fragment, FRAGMENT_LIMIT)
    else:
        while sample(received):
            fragments = poll(on_fragment, FRAGMENT_LIMIT)
            received += fragments
            idle(fragments)
    return sampler


def report(role: str, sampler: Sampler) -> None:
    print("RESULT " + json.dumps({"role": role, "samples": sampler.samples}), flush=True)


def drain(poll) -> None:
    """A subscriber keeps consuming after its RESULT until it is stopped: a publisher whose window started
    later, or that was back pressured, must be able to finish its own (it would wait forever otherwise)."""

    def on_fragment(*_args) -> None:
        pass

    while True:
        if poll(on_fragment, FRAGMENT_LIMIT) == 0:
            time.sleep(0.0001)


# --- ours --------------------------------------------------------------------------------------------------


def ours_pub(
    mode: str, idle_name: str, aeron_dir: str, channel: str, stream_id: int, seconds: float, length: int
) -> None:
    from driver.client import Aeron

    payload = bytes(length)
    with Aeron.connect(aeron_dir=aeron_dir) as aeron:
        publication = aeron.add_publication(channel, stream_id)
        while not publication.is_connected:
            time.sleep(0.001)
        print("READY", flush=True)
        if mode == "message":
            sampler = publish(publication.offer, payload, seconds, ours_idle(idle_name))
        elif mode == "batch":
            offer_many = publication.offer_many
            messages = [payload] * BATCH
            while offer_many(messages) <= 0:
                pass
            sampler = Sampler(seconds)
            sample = sampler.sample
            sent = BATCH
            idle = ours_idle(idle_name)
            while True:
                before = sent
                for _ in range(16):
                    went = offer_many(messages)
                    if went > 0:  # else a code: back pressured, not connected
                        sent += went
                    elif idle is not None:
                        idle()
                if idle is not None:
                    idle(sent - before)
                if not sample(sent):
                    break
        elif mode == "asyncio":
            from driver.client import aio

            async def run() -> Sampler:
                offer_async = publication.offer_async
                await offer_async(payload)
                sampler = Sampler(seconds)
                sample = sampler.sample
                sent = 1
                while True:
                    for _ in range(256):
                        await offer_async(payload)
                    sent += 256
                    if not sample(sent):
                        return sampler

            sampler = aio.run(run())
        elif mode == "asyncio-batch":
            from driver.client import aio

            async def run_batches() -> Sampler:
                messages = [payload] * BATCH
                offer_many = aio.offer_many
                await offer_many(publication, messages)
                sampler = Sampler(seconds)
                sample = sampler.sample
                sent = BATCH
                while True:
                    for _ in range(16):
                        sent += await offer_many(publication, messages)
                    if not sample(sent):
                        return sampler

            sampler = aio.run(run_batches())
        else:
            raise SystemExit(f"unknown mode {mode!r}")
        report("pub", sampler)
        time.sleep(3600)  # stopped by the benchmark


def ours_sub(mode: str, idle_name: str, aeron_dir: str, channel: str, stream_id: int, seconds: float) -> None:
    from driver.client import Aeron

    with Aeron.connect(aeron_dir=aeron_dir) as aeron:
        subscription = aeron.add_subscription(channel, stream_id)
        print("READY", flush=True)
        received = 0
        if mode == "message":

            def on_fragment(buffer, offset, length, header) -> None:
                pass

            sampler = subscribe(subscription.poll, on_fragment, seconds, ours_idle(idle_name))
        elif mode == "batch":
            poll_batch = subscription.poll_batch
            while received == 0:
                received = len(poll_batch(4096))
            sampler = Sampler(seconds)
            sample = sampler.sample
            idle = ours_idle(idle_name)
            if idle is None:
                while sample(received):
                    received += len(poll_batch(4096))
            else:
                while sample(received):
                    fragments = len(poll_batch(4096))
                    received += fragments
                    idle(fragments)
        elif mode in ("asyncio", "asyncio-batch"):
            import asyncio

            from driver.client import aio

            async def run() -> None:
                count = 0

                async def sample(sampler: Sampler) -> None:
                    # Beside the consumer, on time (not per message): it must end even if messages stop.
                    while sampler.sample(count):
                        await asyncio.sleep(SAMPLE_S / 4)
                    report("sub", sampler)

                if mode == "asyncio":
                    messages = subscription.messages(FRAGMENT_LIMIT)
                    async for _message in messages:
                        count = 1
                        sampler_task = asyncio.ensure_future(sample(Sampler(seconds)))
                        break
                    async for _message in messages:  # then drains until stopped
                        count += 1
                else:
                    batches = subscription.fragment_batches(4096)  # as poll_batch(4096) in ``batch``
                    async for batch in batches:
                        count = len(batch)
                        sampler_task = asyncio.ensure_future(sample(Sampler(seconds)))
                        break
                    async for batch in batches:
                        count += len(batch)
                await sampler_task
                raise RuntimeError("the subscription closed")

            aio.run(run())
        else:
            raise SystemExit(f"unknown mode {mode!r}")
        if mode not in ("asyncio", "asyncio-batch"):
            report("sub", sampler)
            drain(subscription.poll)


# --- pyaeron -----------------------------------------------------------------------------------------------


def pyaeron_pub(
    idle_name: str, aeron_dir: str, channel: str, stream_id: int, seconds: float, length: int
) -> None:
    import pyaeron

    payload = bytes(length)
    with pyaeron.Aeron(dir=aeron_dir) as aeron:
        publication = aeron.add_publication(channel, stream_id)
        publication.await_connected(timeout=20)
        print("READY", flush=True)
        # pyaeron's offer returns True or a falsy OfferCode: ``is True`` is its cheapest test (13 ns less per
        # message than the ``> 0`` that publish() needs for our positions).
        offer = publication.offer
        while offer(payload) is not True:
            pass
        sampler = Sampler(seconds)
        sample = sampler.sample
        sent = 1
        idle = pyaeron_idle(idle_name)
        while True:
            before = sent
            if idle is None:
                for _ in range(256):
                    if offer(payload) is True:
                        sent += 1
            else:
                for _ in range(256):
                    if offer(payload) is True:
                        sent += 1
                    else:
                        idle()
                idle(sent - before)
            if not sample(sent):
                break
        report("pub", sampler)
        time.sleep(3600)


def pyaeron_sub(idle_name: str, aeron_dir: str, channel: str, stream_id: int, seconds: float) -> None:
    import pyaeron

    def on_fragment(buffer, header) -> None:
        pass

    with pyaeron.Aeron(dir=aeron_dir) as aeron:
        subscription = aeron.add_subscription(channel, stream_id)
        print("READY", flush=True)
        sampler = subscribe(subscription.poll, on_fragment, seconds, pyaeron_idle(idle_name))
        report("sub", sampler)
        drain(subscription.poll)


def main() -> int:
    # The benchmark stops each side with SIGTERM: leave the ``with`` blocks so the client closes its publication
    # or subscription at once. Killed outright, the driver would keep them until the client's liveness timeout,
    # and the next run would share the driver with their leftovers (a UDP sender still sending, say).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    role, client, mode, idle_name, aeron_dir, channel, stream_id, seconds = sys.argv[1:9]
    if idle_name not in IDLE_NAMES:
        raise SystemExit(f"unknown idle strategy {idle_name!r}: one of {', '.join(IDLE_NAMES)}")
    args = (idle_name, aeron_dir, channel, int(stream_id), float(seconds))
    if client == "ours":
        if role == "pub":
            ours_pub(mode, *args, int(sys.argv[9]))
        else:
            ours_sub(mode, *args)
    elif client == "pyaeron":
        if mode != "message":
            raise SystemExit(f"pyaeron has no {mode!r} mode here")
        if role == "pub":
            pyaeron_pub(*args, int(sys.argv[9]))
        else:
            pyaeron_sub(*args)
    else:
        raise SystemExit(f"unknown client {client!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
