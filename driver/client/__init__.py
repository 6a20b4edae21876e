"""Python Aeron client (Aeron 1.15.1 protocol)."""

from driver.client.aeron import Aeron
from driver.client.aio import Message, PublicationClosedError
from driver.client.client_conductor_agent import ClientConductorAgent
from driver.client.counter import Counter
from driver.client.exceptions import (
    AeronError,
    ClientClosedError,
    ClientTimeoutError,
    CncVersionError,
    DriverTimeoutError,
    RegistrationError,
)
from driver.client.fragment_assembler import FragmentAssembler
from driver.client.idle_strategy import (
    BackoffIdleStrategy,
    BusySpinIdleStrategy,
    IdleStrategy,
    NoOpIdleStrategy,
    SleepingIdleStrategy,
    YieldingIdleStrategy,
)
from driver.client.image import BlockHandler, Image, RawBlockHandler
from driver.client.offer_result import (
    ADMIN_ACTION,
    BACK_PRESSURED,
    CLOSED,
    MAX_POSITION_EXCEEDED,
    NOT_CONNECTED,
)
from driver.client.publication import ExclusivePublication, Publication
from driver.client.subscription import Subscription
from driver.concurrent.logbuffer.buffer_claim import BufferClaim

__all__ = [
    "ADMIN_ACTION",
    "BACK_PRESSURED",
    "CLOSED",
    "MAX_POSITION_EXCEEDED",
    "NOT_CONNECTED",
    "Aeron",
    "AeronError",
    "BackoffIdleStrategy",
    "BlockHandler",
    "BufferClaim",
    "BusySpinIdleStrategy",
    "ClientClosedError",
    "ClientConductorAgent",
    "ClientTimeoutError",
    "CncVersionError",
    "Counter",
    "DriverTimeoutError",
    "ExclusivePublication",
    "FragmentAssembler",
    "IdleStrategy",
    "Image",
    "Message",
    "NoOpIdleStrategy",
    "Publication",
    "PublicationClosedError",
    "RawBlockHandler",
    "RegistrationError",
    "SleepingIdleStrategy",
    "Subscription",
    "YieldingIdleStrategy",
]
