"""CommandQueue and the proxies: a full queue keeps commands in the proxy's backlog, in order, each
counted once as a failed offer; nothing is dropped however small the queue."""

from __future__ import annotations

import pytest

from driver.agent.command_queue import CommandQueue
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counters import CountersManager
from driver.driver_conductor_proxy import DriverConductorProxy
from driver.receiver_proxy import ReceiverProxy
from driver.sender_proxy import SenderProxy
from driver.status.system_counters import SystemCounterDescriptor as SC
from driver.status.system_counters import SystemCounters


class Recorder:
    """A consumer that records every command it is given, by name."""

    def __init__(self) -> None:
        self.log: list[tuple] = []

    def __getattr__(self, name: str):
        if not name.startswith("on_"):
            raise AttributeError(name)
        return lambda *args: self.log.append((name, *args))


@pytest.fixture
def system() -> SystemCounters:
    manager = CountersManager(AtomicBuffer(bytearray(64 * 512)), AtomicBuffer(bytearray(64 * 128)), lambda: 0)
    return SystemCounters(manager)


def test_queue_is_bounded_and_drains_in_order() -> None:
    queue = CommandQueue(capacity=2)
    assert queue.offer("on_a", (1,)) and queue.offer("on_a", (2,))
    assert not queue.offer("on_a", (3,))
    consumer = Recorder()
    assert queue.drain(consumer, limit=1) == 1
    assert queue.drain(consumer) == 1
    assert consumer.log == [("on_a", 1), ("on_a", 2)]
    with pytest.raises(ValueError, match="at least 1"):
        CommandQueue(capacity=0)


def test_sender_proxy_backlog_keeps_order_and_counts_failed_offers(system: SystemCounters) -> None:
    queue = CommandQueue(capacity=3)
    proxy = SenderProxy(queue, system.get(SC.SENDER_PROXY_FAILS))
    consumer = Recorder()
    for i in range(10):
        proxy.new_network_publication(i)
    assert len(queue) == 3 and proxy.backlog == 7
    assert system.get(SC.SENDER_PROXY_FAILS).get() == 7  # each command that did not fit, once
    # The consumer frees room; a newer command waits behind the backlog, never overtakes it.
    queue.drain(consumer, limit=2)
    proxy.remove_network_publication("late")
    assert proxy.backlog == 6
    assert system.get(SC.SENDER_PROXY_FAILS).get() == 8
    while proxy.has_pending():
        proxy.flush()  # the producer's next duty cycle
        queue.drain(consumer)
    assert consumer.log == [("on_new_network_publication", i) for i in range(10)] + [
        ("on_remove_network_publication", "late")
    ]
    assert system.get(SC.SENDER_PROXY_FAILS).get() == 8  # moving the backlog is not a new failure
    assert system.get(SC.RECEIVER_PROXY_FAILS).get() == 0


def test_receiver_and_conductor_proxies_count_their_own_failures(system: SystemCounters) -> None:
    receiver_queue, conductor_queue = CommandQueue(capacity=1), CommandQueue(capacity=1)
    receiver_proxy = ReceiverProxy(receiver_queue, system.get(SC.RECEIVER_PROXY_FAILS))
    conductor_proxy = DriverConductorProxy(conductor_queue, system.get(SC.CONDUCTOR_PROXY_FAILS))
    receiver_proxy.add_subscription("endpoint", 10)
    receiver_proxy.remove_subscription("endpoint", 10, 5)
    receiver_proxy.close_receive_channel_endpoint("endpoint")
    conductor_proxy.create_publication_image("setup", "endpoint", 0, ("h", 1), ("h", 2))
    conductor_proxy.create_publication_image("setup2", "endpoint", 0, ("h", 1), ("h", 2))
    assert system.get(SC.RECEIVER_PROXY_FAILS).get() == 2
    assert system.get(SC.CONDUCTOR_PROXY_FAILS).get() == 1
    receiver, conductor = Recorder(), Recorder()
    while receiver_proxy.has_pending() or conductor_proxy.has_pending():
        receiver_proxy.flush()
        conductor_proxy.flush()
        receiver_queue.drain(receiver)
        conductor_queue.drain(conductor)
    assert receiver.log == [
        ("on_add_subscription", "endpoint", 10, None),
        ("on_remove_subscription", "endpoint", 10, 5),
        ("on_close_receive_channel_endpoint", "endpoint"),
    ]
    assert [entry[1] for entry in conductor.log] == ["setup", "setup2"]


def test_using_the_proxy_moves_its_backlog_first(system: SystemCounters) -> None:
    queue = CommandQueue(capacity=2)
    proxy = SenderProxy(queue, system.get(SC.SENDER_PROXY_FAILS))
    for i in range(3):
        proxy.new_network_publication(i)
    consumer = Recorder()
    queue.drain(consumer)  # room for two
    proxy.new_network_publication(3)  # the backlogged 2 goes first, then 3 fits
    assert proxy.backlog == 0
    queue.drain(consumer)
    assert [args[1] for args in consumer.log] == [0, 1, 2, 3]
