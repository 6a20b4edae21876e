"""What an offer returns when the message did not go: Aeron 1.15.1's negative offer results.

Their own module, so that the publications and the asyncio helpers that wait them out can both import them.
"""

from __future__ import annotations

NOT_CONNECTED = -1
"""No subscriber is connected to the publication."""
BACK_PRESSURED = -2
"""Subscribers are too far behind: try again later."""
ADMIN_ACTION = -3
"""The log was rotating to a new term: try again at once."""
CLOSED = -4
"""The publication is closed."""
MAX_POSITION_EXCEEDED = -5
"""The stream reached the end of what its term length can address (term length x 2^31)."""

OFFER_RESULT_NAMES = {
    NOT_CONNECTED: "NOT_CONNECTED",
    BACK_PRESSURED: "BACK_PRESSURED",
    ADMIN_ACTION: "ADMIN_ACTION",
    CLOSED: "CLOSED",
    MAX_POSITION_EXCEEDED: "MAX_POSITION_EXCEEDED",
}
