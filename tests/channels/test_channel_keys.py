"""Channel keys of today's Aeron on our driver: each is honoured or refused by name; others stay ignored.

A real client adds publications and subscriptions to an embedded driver; the refusals reach the client as the
driver's error (INVALID_CHANNEL) naming the key.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from driver.client import Aeron, RegistrationError
from driver.protocol.channel_uri import UNSUPPORTED_PARAM_NAMES
from driver.protocol.control_protocol import ErrorCode
from harness.ports import free_port

# A valid value for each, so only "not supported" can be the reason.
VALUES = {
    "eos": "false",
    "tether": "false",
    "group": "true",
    "rejoin": "false",
    "cc": "static",
    "fc": "min",
    "gtag": "1",
    "ssc": "true",
    "ats": "true",
    "so-sndbuf": "65536",
    "so-rcvbuf": "65536",
    "rcv-wnd": "65536",
    "media-rcv-ts-offset": "reserved",
    "channel-rcv-ts-offset": "reserved",
    "channel-snd-ts-offset": "reserved",
    "nak-delay": "1ms",
    "untethered-window-limit-timeout": "1s",
    "untethered-linger-timeout": "1s",
    "untethered-resting-timeout": "1s",
    "max-resend": "4",
    "pub-wnd": "65536",
}


@pytest.fixture
def aeron(embedded_driver) -> Iterator[Aeron]:
    driver = embedded_driver()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as client:
        yield client


def _channels() -> tuple[str, str]:
    return "aeron:ipc", f"aeron:udp?endpoint=127.0.0.1:{free_port()}"


@pytest.mark.parametrize("key", UNSUPPORTED_PARAM_NAMES)
def test_a_key_of_todays_aeron_this_driver_lacks_is_refused_by_name(aeron: Aeron, key: str) -> None:
    for base in _channels():
        channel = f"{base}{'|' if '?' in base else '?'}{key}={VALUES[key]}"
        for add in (aeron.add_publication, aeron.add_subscription):
            with pytest.raises(RegistrationError) as info:
                add(channel, 1001)
            assert info.value.code == ErrorCode.INVALID_CHANNEL
            assert f"parameter {key!r} is not supported" in info.value.driver_message


def test_keys_aeron_ignores_stay_ignored(aeron: Aeron) -> None:
    for base in _channels():
        channel = f"{base}{'|' if '?' in base else '?'}alias=mine|no-such-key=1|response-endpoint=x"
        aeron.add_publication(channel, 1002).close()
        aeron.add_subscription(channel, 1002).close()


def test_stream_id_on_a_publication_must_match_its_stream(aeron: Aeron) -> None:
    for base in _channels():
        sep = "|" if "?" in base else "?"
        aeron.add_publication(f"{base}{sep}stream-id=1003", 1003).close()
        with pytest.raises(RegistrationError, match="stream-id=1004 does not match"):
            aeron.add_publication(f"{base}{sep}stream-id=1004", 1003)
        # Subscriptions do not read it (as in Aeron).
        aeron.add_subscription(f"{base}{sep}stream-id=7", 1003).close()
