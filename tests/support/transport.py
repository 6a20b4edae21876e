"""A recording stand-in for ``UdpChannelTransport`` (and for the ``ReceiveBatch`` it fills), for sans-IO tests of
the endpoints, the sender and the receiver."""

from __future__ import annotations

from collections import deque
from typing import Any

Address = tuple[str, int]


class FakeBatch:
    """What the agents use of a ReceiveBatch: capacity, drained, data(i), address(i); filled by ``put``."""

    def __init__(self, capacity: int = 32) -> None:
        self.capacity = capacity
        self.items: list[tuple[bytes, Address]] = []
        self.drained = True

    def put(self, items: list[tuple[bytes, Address]]) -> None:
        self.items = items
        self.drained = len(items) < self.capacity

    def data(self, i: int) -> memoryview:
        return memoryview(self.items[i][0])

    def address(self, i: int) -> Address:
        return self.items[i][1]


class FakeTransport:
    """Datagrams sent are recorded as (bytes, address) (address None for a connected ``send``); datagrams
    appended to ``inbox`` are handed out by ``receive_batch`` to any batch with ``put(items)``."""

    def __init__(self) -> None:
        self.inbox: deque[tuple[bytes, Address]] = deque()
        self.sent: list[tuple[bytes, Any]] = []
        self.polls = 0
        self.closed = False

    def send(self, data: Any) -> int:
        self.sent.append((bytes(data), None))
        return len(data)

    def send_to(self, data: Any, address: Any) -> int:
        self.sent.append((bytes(data), address))
        return len(data)

    def receive_batch(self, batch: Any) -> int:
        self.polls += 1
        items = [self.inbox.popleft() for _ in range(min(batch.capacity, len(self.inbox)))]
        batch.put(items)
        return len(items)

    def register_reader(self, loop: Any, waker: Any) -> None:
        pass

    def unregister_reader(self, loop: Any = None) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def take(self) -> list[tuple[bytes, Any]]:
        """(datagram, address) pairs sent since the last take."""
        sent, self.sent = self.sent, []
        return sent

    def take_data(self) -> list[bytes]:
        """Datagrams sent since the last take, without their addresses."""
        return [data for data, _ in self.take()]
