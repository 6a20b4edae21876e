"""Wire tolerance: every channel parameter form, accepted or refused as by the Aeron 1.15.1 driver.

Each case is a channel a client adds (publication ``pub``, exclusive publication ``xpub``, subscription ``sub``,
or ``keep``: a publication left open for later cases to refer to) and what the driver does with it: accepted,
with the term length, mtu, session id, initial term id and position the client then sees, or refused with an
ON_ERROR code and a message naming the parameter. The cases run in order on one driver (the order matters:
tags and entity tags refer to earlier publications, which linger after close, as in 1.15.1).

Every expectation was taken from the real 1.15.1 driver: tests/interop/test_channel_checks.py runs the table
through tests/interop/java/ChannelChecks.java against the Java driver and against ours, and checks both give
these outcomes. Here the table runs against our driver in-process, through the Python client.

Driver settings for both: 1 MiB terms (udp and ipc), sparse files, publications linger 60 s (so that what
lingers does not depend on how fast the cases run). ``{port}``, ``{port2}`` and ``{port3}`` are free UDP ports,
``{wrapped_port}`` is ``{port}`` + 2^32 (1.15.1 reads ports with ``parseIntAscii``, which wraps).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from driver.client import Aeron, RegistrationError
from tests.support import embedded_driver, free_port, new_aeron_dir, wait_for

TERM_LENGTH = 1024 * 1024
DRIVER_PROPS = {
    "aeron.term.buffer.length": str(TERM_LENGTH),
    "aeron.ipc.term.buffer.length": str(TERM_LENGTH),
    "aeron.term.buffer.sparse.file": "true",
    "aeron.publication.linger.timeout": "60s",
}
"""The same settings for the Java driver and ours (as -D properties)."""


@dataclass(frozen=True)
class Outcome:
    """``accepted`` with the values the client must see (only those given), or refused with ``code`` and a
    text our message must contain (it names the parameter or the rule)."""

    accepted: bool
    values: dict[str, int] = field(default_factory=dict)
    code: int | None = None
    names: str = ""


def ok(**values: int) -> Outcome:
    return Outcome(True, values)


def refused(code: int, names: str) -> Outcome:
    return Outcome(False, code=code, names=names)


@dataclass(frozen=True)
class Case:
    kind: str
    channel: str
    expected: Outcome
    stream: int | None = None
    """The stream id; None: one of its own (1000 + the case's index)."""


# fmt: off
CASES = [
    Case("pub", "aeron:ipc?term-length=64k", ok(term=65536, mtu=1408)),
    Case("pub", "aeron:ipc?term-length=64K", ok(term=65536, mtu=1408)),
    Case("pub", "aeron:ipc?term-length=65536", ok(term=65536, mtu=1408)),
    Case("pub", "aeron:ipc?term-length=+65536", ok(term=65536, mtu=1408)),
    Case("pub", "aeron:ipc?term-length=1m", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?term-length=1M", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?term-length=+64k", refused(0, 'term-length')),  # NumberFormatException : '+' is not a valid digit @ 0
    Case("pub", "aeron:ipc?term-length= 64k", refused(0, 'term-length')),  # NumberFormatException : ' ' is not a valid digit @ 0
    Case("pub", "aeron:ipc?term-length=64k ", refused(0, 'term-length')),  # NumberFormatException : 'k' is not a valid digit @ 2
    Case("pub", "aeron:ipc?term-length= 65536", refused(0, 'term-length')),  # NumberFormatException : For input string: " 65536"
    Case("pub", "aeron:ipc?term-length=0x10000", refused(0, 'term-length')),  # NumberFormatException : For input string: "0x10000"
    Case("pub", "aeron:ipc?term-length=65536.0", refused(0, 'term-length')),  # NumberFormatException : For input string: "65536.0"
    Case("pub", "aeron:ipc?term-length=", refused(0, 'term-length')),  # StringIndexOutOfBoundsException : String index out of range: -1
    Case("pub", "aeron:ipc?term-length=4295032832", ok(term=65536, mtu=1408)),
    Case("pub", "aeron:ipc?term-length=4194368k", ok(term=65536, mtu=1408)),
    Case("pub", "aeron:ipc?term-length=-64k", refused(0, 'term-length')),  # IllegalStateException : Term length less than min length of 65536: length=-65536
    Case("pub", "aeron:ipc?term-length=k", refused(0, 'term-length')),  # IllegalStateException : Term length less than min length of 65536: length=0
    Case("pub", "aeron:ipc?term-length=2g", refused(0, 'term-length')),  # IllegalStateException : Term length less than min length of 65536: length=-2147483648
    Case("pub", "aeron:ipc?term-length=9223372036854775807", refused(0, 'term-length')),  # IllegalStateException : Term length less than min length of 65536: length=-1
    Case("pub", "aeron:ipc?term-length=9223372036854775808", refused(0, 'term-length')),  # NumberFormatException : For input string: "9223372036854775808"
    Case("pub", "aeron:ipc?term-length=64kb", refused(0, 'term-length')),  # NumberFormatException : 'k' is not a valid digit @ 2
    Case("pub", "aeron:ipc?term-length=96k", refused(0, 'term-length')),  # IllegalStateException : Term length not a power of 2: length=98304
    Case("pub", "aeron:ipc?term-length=32k", refused(0, 'term-length')),  # IllegalStateException : Term length less than min length of 65536: length=32768
    Case("pub", "aeron:ipc?term-length=-9007199254740928k", ok(term=65536, mtu=1408)),
    Case("pub", "aeron:ipc?term-length=64k|term-length=128k", ok(term=131072, mtu=1408)),
    Case("pub", "aeron:ipc?mtu=1408", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?mtu=1k", ok(term=1048576, mtu=1024)),
    Case("pub", "aeron:ipc?mtu=1K", ok(term=1048576, mtu=1024)),
    Case("pub", "aeron:ipc?mtu=65504", ok(term=1048576, mtu=65504)),
    Case("pub", "aeron:ipc?mtu=65505", refused(0, 'mtu')),  # ConfigurationException : mtuLength must be a >= HEADER_LENGTH and <= MAX_UDP_PAYLOAD_LENGT
    Case("pub", "aeron:ipc?mtu=64k", refused(0, 'mtu')),  # ConfigurationException : mtuLength must be a >= HEADER_LENGTH and <= MAX_UDP_PAYLOAD_LENGT
    Case("pub", "aeron:ipc?mtu=31", refused(0, 'mtu')),  # ConfigurationException : mtuLength must be a >= HEADER_LENGTH and <= MAX_UDP_PAYLOAD_LENGT
    Case("pub", "aeron:ipc?mtu=0", refused(0, 'mtu')),  # ConfigurationException : mtuLength must be a >= HEADER_LENGTH and <= MAX_UDP_PAYLOAD_LENGT
    Case("pub", "aeron:ipc?mtu=-32", refused(0, 'mtu')),  # ConfigurationException : mtuLength must be a >= HEADER_LENGTH and <= MAX_UDP_PAYLOAD_LENGT
    Case("pub", "aeron:ipc?mtu=1400", refused(0, 'mtu')),  # ConfigurationException : mtuLength must be a multiple of FRAME_ALIGNMENT: 1400
    Case("pub", "aeron:ipc?mtu=4294968320", ok(term=1048576, mtu=1024)),
    Case("pub", "aeron:ipc?mtu= 1408", refused(0, 'mtu')),  # NumberFormatException : For input string: " 1408"
    Case("pub", "aeron:ipc?mtu=", refused(0, 'mtu')),  # StringIndexOutOfBoundsException : String index out of range: -1
    Case("pub", "aeron:ipc?mtu=k", refused(0, 'mtu')),  # ConfigurationException : mtuLength must be a >= HEADER_LENGTH and <= MAX_UDP_PAYLOAD_LENGT
    Case("pub", "aeron:ipc?term-length=64k|mtu=16k", refused(0, 'mtu')),  # IllegalStateException : MTU greater than max message length for term length: mtu=16384 max
    Case("pub", "aeron:ipc?term-length=64k|mtu=8k", ok(term=65536, mtu=8192)),
    Case("pub", "aeron:ipc?linger=0", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=5s", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=5S", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=5000ms", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=5MS", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=5Ms", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=10us", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=10US", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=10ns", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=10NS", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=-1", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=-1s", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=-1294967296", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=s", refused(0, 'linger')),  # StringIndexOutOfBoundsException : String index out of range: -1
    Case("pub", "aeron:ipc?linger=ms", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=ns", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=-ms", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=-s", refused(0, 'linger')),  # NumberFormatException : linger: -s should end with: s, ms, us, or ns.
    Case("pub", "aeron:ipc?linger=5", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=+5", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=+5s", refused(0, 'linger')),  # NumberFormatException : '+' is not a valid digit @ 0
    Case("pub", "aeron:ipc?linger=5 s", refused(0, 'linger')),  # NumberFormatException : linger: 5 s should end with: s, ms, us, or ns.
    Case("pub", "aeron:ipc?linger= 5s", refused(0, 'linger')),  # NumberFormatException : ' ' is not a valid digit @ 0
    Case("pub", "aeron:ipc?linger=5m", refused(0, 'linger')),  # NumberFormatException : linger: 5m should end with: s, ms, us, or ns.
    Case("pub", "aeron:ipc?linger=5h", refused(0, 'linger')),  # NumberFormatException : linger: 5h should end with: s, ms, us, or ns.
    Case("pub", "aeron:ipc?linger=1.5s", refused(0, 'linger')),  # NumberFormatException : '.' is not a valid digit @ 1
    Case("pub", "aeron:ipc?linger=99999999999s", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=99999999999999999999", refused(0, 'linger')),  # NumberFormatException : For input string: "99999999999999999999"
    Case("pub", "aeron:ipc?linger=99999999999999999999s", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=--5s", refused(0, 'linger')),  # NumberFormatException : '-' is not a valid digit @ 1
    Case("pub", "aeron:ipc?linger=", refused(0, 'linger')),  # StringIndexOutOfBoundsException : String index out of range: -1
    Case("pub", "aeron:ipc?linger=0x10", refused(0, 'linger')),  # NumberFormatException : For input string: "0x10"
    Case("pub", "aeron:ipc?sparse=true", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?sparse=false", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?sparse=TRUE", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?sparse=yes", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?sparse=", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?session-id=5", ok(term=1048576, mtu=1408, session=5)),
    Case("pub", "aeron:ipc?session-id=+6", ok(term=1048576, mtu=1408, session=6)),
    Case("pub", "aeron:ipc?session-id=-5", ok(term=1048576, mtu=1408, session=-5)),
    Case("pub", "aeron:ipc?session-id=2147483647", ok(term=1048576, mtu=1408, session=2147483647)),
    Case("pub", "aeron:ipc?session-id=-2147483648", ok(term=1048576, mtu=1408, session=-2147483648)),
    Case("pub", "aeron:ipc?session-id=2147483648", refused(0, 'session-id')),  # NumberFormatException : For input string: "2147483648"
    Case("pub", "aeron:ipc?session-id=-2147483649", refused(0, 'session-id')),  # NumberFormatException : For input string: "-2147483649"
    Case("pub", "aeron:ipc?session-id=0x10", refused(0, 'session-id')),  # NumberFormatException : For input string: "0x10"
    Case("pub", "aeron:ipc?session-id= 5", refused(0, 'session-id')),  # NumberFormatException : For input string: " 5"
    Case("pub", "aeron:ipc?session-id=", refused(0, 'session-id')),  # NumberFormatException : For input string: ""
    Case("pub", "aeron:ipc?session-id=tag:1", refused(0, 'session-id')),  # IllegalArgumentException : session-id=tag:1 must reference a network publication
    Case("pub", "aeron:ipc?session-id=tag:", refused(0, 'session-id')),  # StringIndexOutOfBoundsException : String index out of range: 4
    Case("pub", "aeron:ipc?session-id=TAG:1", refused(0, 'session-id')),  # NumberFormatException : For input string: "TAG:1"
    Case("xpub", "aeron:ipc?session-id=7", ok(term=1048576, mtu=1408, session=7)),
    Case("xpub", "aeron:ipc?term-length=64k|init-term-id=5|term-id=7|term-offset=64", ok(term=65536, mtu=1408, initial=5, position=131136)),
    Case("xpub", "aeron:ipc?term-length=64k|init-term-id=+5|term-id=+7|term-offset=+64", ok(term=65536, mtu=1408, initial=5, position=131136)),
    Case("xpub", "aeron:ipc?term-length=64k|init-term-id=5|term-id=7|term-offset=65536", ok(term=65536, mtu=1408, initial=5, position=196608)),
    Case("xpub", "aeron:ipc?term-length=64k|init-term-id=5|term-id=7|term-offset=65568", refused(0, 'term-offset')),  # IllegalArgumentException : term-offset=65568 > term-length=65536
    Case("xpub", "aeron:ipc?term-length=64k|init-term-id=5|term-id=7|term-offset=33", refused(0, 'term-offset')),  # IllegalArgumentException : term-offset=33 must be a multiple of FRAME_ALIGNMENT
    Case("xpub", "aeron:ipc?term-length=64k|init-term-id=5|term-id=7|term-offset=-32", refused(0, 'term-offset')),  # IllegalArgumentException : term-offset=-32 out of range
    Case("xpub", "aeron:ipc?term-length=64k|init-term-id=5|term-id=4|term-offset=0", refused(0, 'term-id')),  # IllegalStateException : difference greater than 2^31 - 1: init-term-id=5 when term-id=4
    Case("xpub", "aeron:ipc?term-length=64k|init-term-id=5|term-id=7", refused(0, 'must be used as a complete set')),  # IllegalArgumentException : params must be used as a complete set: init-term-id term-id ter
    Case("xpub", "aeron:ipc?term-length=64k|init-term-id=-2147483648|term-id=2147483647|term-offset=0", refused(0, 'term-id')),  # IllegalStateException : difference greater than 2^31 - 1: init-term-id=-2147483648 when te
    Case("xpub", "aeron:ipc?term-length=64k|init-term-id=2147483647|term-id=-2147483648|term-offset=0", ok(term=65536, mtu=1408, initial=2147483647, position=65536)),
    Case("xpub", "aeron:ipc?term-length=64k|init-term-id=5|term-id=7|term-offset=64k", refused(0, 'term-offset')),  # NumberFormatException : For input string: "64k"
    Case("xpub", "aeron:ipc?term-length=64k|init-term-id=|term-id=7|term-offset=0", refused(0, 'init-term-id')),  # NumberFormatException : For input string: ""
    Case("pub", "aeron:ipc?init-term-id=5", ok(term=1048576, mtu=1408)),
    Case("sub", "aeron:ipc?init-term-id=5", refused(0, 'must be used as a complete set')),  # IllegalArgumentException : params must be used as a complete set: init-term-id term-id ter
    Case("sub", "aeron:ipc?init-term-id=5|term-id=7|term-offset=64", ok()),
    Case("sub", "aeron:ipc?init-term-id=5|term-id=7|term-offset=33", refused(0, 'term-offset')),  # IllegalArgumentException : term-offset=33 must be a multiple of FRAME_ALIGNMENT
    Case("sub", "aeron:ipc?init-term-id=5|term-id=7|term-offset=2147483616", refused(0, 'term-offset')),  # IllegalArgumentException : term-offset=2147483616 out of range
    Case("sub", "aeron:ipc?session-id=5", ok()),
    Case("sub", "aeron:ipc?session-id=+5", ok()),
    Case("sub", "aeron:ipc?session-id=tag:1", refused(0, 'session-id')),  # NumberFormatException : For input string: "tag:1"
    Case("sub", "aeron:ipc?session-id=x", refused(0, 'session-id')),  # NumberFormatException : For input string: "x"
    Case("sub", "aeron:ipc?reliable=false", ok()),
    Case("sub", "aeron:ipc?reliable=FALSE", ok()),
    Case("sub", "aeron:ipc?reliable=yes", ok()),
    Case("sub", "aeron:ipc?reliable=", ok()),
    Case("sub", "aeron:ipc?sparse=maybe", ok()),
    Case("pub", "aeron:ipc?tags=1,2", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?tags=1,-1", refused(0, 'tags')),  # IllegalArgumentException : -1 tag is reserved
    Case("pub", "aeron:ipc?tags=1,x", refused(0, 'tags')),  # NumberFormatException : For input string: "x"
    Case("pub", "aeron:ipc?tags=1,", refused(0, 'tags')),  # NumberFormatException : For input string: ""
    Case("pub", "aeron:ipc?tags=x", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?tags=1,+3", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?tags=1,99999999999999999999", refused(0, 'tags')),  # NumberFormatException : For input string: "99999999999999999999"
    Case("pub", "aeron:ipc?tags=1,2,3", refused(0, 'entity tag 2')),  # IllegalArgumentException : 2 entityTag already in use
    Case("pub", "aeron:ipc?alias=a=b:c", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?=5", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?", refused(0, "'?' is not followed by a parameter")),  # IllegalArgumentException : no more input found, state=PARAMS_KEY
    Case("pub", "aeron:ipc?|", refused(0, "parameter '|' has no '='")),  # IllegalArgumentException : no more input found, state=PARAMS_KEY
    Case("pub", "aeron:ipc?mtu", refused(0, "'mtu' has no '='")),  # IllegalArgumentException : no more input found, state=PARAMS_KEY
    Case("pub", "aeron:ipc?unknown-key=1", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipcx", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc ", ok(term=1048576, mtu=1408)),
    Case("pub", " aeron:ipc", refused(1, "must start with 'aeron:'")),  # java.lang.IllegalArgumentException: Aeron URIs must start with 'aeron:', found: ' aeron:ip
    Case("pub", "aeron:IPC", refused(1, "media 'IPC'")),  # java.lang.IllegalArgumentException: UdpChannel only supports UDP media: aeron:IPC
    Case("pub", "Aeron:ipc", refused(1, "must start with 'aeron:'")),  # java.lang.IllegalArgumentException: Aeron URIs must start with 'aeron:', found: 'Aeron:ipc
    Case("pub", "aeron:ipc:x", refused(0, "':' is not allowed in the media")),  # IllegalArgumentException : encountered ':' within media definition
    Case("sub", "aeron-spy:aeron:ipc", refused(1, "media 'ipc'")),  # java.lang.IllegalArgumentException: UdpChannel only supports UDP media: aeron-spy:aeron:ip
    Case("pub", "aeron:udp?endpoint=localhost:{port}", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=LOCALHOST:{port}", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=127.0.0.1:{port}", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=[::1]:{port}", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=localhost", refused(1, 'endpoint')),  # java.lang.IllegalArgumentException: The 'port' portion of the address is required
    Case("pub", "aeron:udp?endpoint=localhost:", refused(1, 'endpoint')),  # java.lang.IllegalArgumentException: The 'port' portion of the address is required
    Case("pub", "aeron:udp?endpoint=localhost:99999", refused(1, 'endpoint')),  # java.lang.IllegalArgumentException: port out of range:99999
    Case("pub", "aeron:udp?endpoint=localhost:65536", refused(1, 'endpoint')),  # java.lang.IllegalArgumentException: port out of range:65536
    Case("pub", "aeron:udp?endpoint=localhost:{wrapped_port}", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=no-such-host.invalid:{port}", refused(1, 'endpoint')),  # java.net.UnknownHostException: could not resolve endpoint address: no-such-host.invalid:46
    Case("pub", "aeron:udp?endpoint=[::1]", refused(1, 'endpoint')),  # java.lang.IllegalArgumentException: The 'port' portion of the address is required
    Case("pub", "aeron:udp?endpoint=::1:{port}", refused(1, 'endpoint')),  # java.lang.IllegalArgumentException: Invalid format: ::1:{port}
    Case("pub", "aeron:udp?endpoint=127.0.0.1:+{port}", refused(1, 'endpoint')),  # java.lang.IllegalArgumentException: Invalid format: 127.0.0.1:+{port}
    Case("pub", "aeron:udp?endpoint= localhost:{port}", refused(1, 'endpoint')),  # java.net.UnknownHostException: could not resolve endpoint address:  localhost:{port}
    Case("pub", "aeron:udp?endpoint=localhost:{port} ", refused(1, 'endpoint')),  # java.lang.IllegalArgumentException: Invalid format: localhost:{port}
    Case("pub", "aeron:udp?endpoint=", refused(1, 'endpoint')),  # java.lang.NullPointerException: Input string must not be null or empty
    Case("pub", "aeron:udp?endpoint=:{port}", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=[127.0.0.1]:{port}", refused(1, 'endpoint')),  # java.net.UnknownHostException: could not resolve endpoint address: [127.0.0.1]:{port}
    Case("pub", "aeron:udp?endpoint=224.0.1.1:{port}|interface=127.0.0.1", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=224.0.1.2:{port}|interface=127.0.0.1", refused(1, 'endpoint')),  # java.lang.IllegalArgumentException: Multicast data address must be odd
    Case("pub", "aeron:udp?endpoint=224.0.1.1:{port}|interface=127.0.0.1|ttl=5", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=224.0.1.1:{port}|interface=127.0.0.1|ttl=x", refused(1, 'ttl')),  # java.lang.NumberFormatException: For input string: "x"
    Case("pub", "aeron:udp?endpoint=224.0.1.1:{port}|interface=127.0.0.1|ttl=+5", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=localhost:{port}|ttl=x", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=localhost:{port}|interface=127.0.0.1", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=localhost:{port}|interface=127.0.0.1:0", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=localhost:{port}|interface=127.0.0.1/8", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=localhost:{port}|interface=127.0.0.1/33", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=localhost:{port}|interface=0.0.0.0", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=localhost:{port}|interface=10.255.255.1", refused(1, 'interface')),  # java.lang.IllegalArgumentException: Unable to find multicast interface matching criteria:
    Case("pub", "aeron:udp?endpoint=localhost:{port}|interface=", refused(1, 'interface')),  # java.lang.IllegalArgumentException: search address string is null or empty
    Case("pub", "aeron:udp?endpoint=localhost:{port}|interface=localhost", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=localhost:{port}|control=localhost:{port2}", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=localhost:{port}|control=localhost:{port2}|control-mode=foo", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?control=localhost:{port3}|control-mode=manual", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?control-mode=manual", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?control-mode=dynamic", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?control-mode=foo", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?control-mode=", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?tags=5", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?tags=x", refused(1, 'tags')),  # java.lang.NumberFormatException: For input string: "x"
    Case("pub", "aeron:udp?tags=+5", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?tags=", refused(1, 'tags')),  # java.lang.NumberFormatException: For input string: ""
    Case("pub", "aeron:udp?tags=5|endpoint=localhost:{port}", refused(0, 'tags=5')),  # IllegalArgumentException : matching tag has set endpoint or control address
    Case("pub", "aeron:udp", refused(1, 'at least one of endpoint')),  # java.lang.IllegalArgumentException: Aeron URIs for UDP must specify an endpoint address, c
    Case("pub", "aeron:udp?mtu=9k|endpoint=localhost:{port}", ok(term=1048576, mtu=9216)),
    Case("pub", "aeron:udp?mtu=1408|term-length=64k|endpoint=localhost:{port}", ok(term=65536, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=localhost:{port}|", refused(1, "'|' is not followed by a parameter")),  # java.lang.IllegalArgumentException: no more input found, state=PARAMS_KEY
    Case("pub", "aeron-spy:aeron:udp?endpoint=localhost:{port}", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipx?endpoint=localhost:{port}", refused(1, "media 'ipx'")),  # java.lang.IllegalArgumentException: UdpChannel only supports UDP media: aeron:ipx?endpoint
    Case("sub", "aeron:udp?endpoint=localhost:{port}", ok()),
    Case("sub", "aeron:udp?endpoint=localhost:{port}|reliable=false", ok()),
    Case("sub", "aeron:udp?endpoint=localhost:{port}|session-id=+5", ok()),
    Case("sub", "aeron:udp?endpoint=localhost:{port}|mtu=x", ok()),
    Case("sub", "aeron:udp?endpoint=localhost:{port}|term-length=x", ok()),
    Case("sub", "aeron:udp?endpoint=localhost:{port}|linger=x", ok()),
    Case("sub", "aeron-spy:aeron:udp?endpoint=localhost:{port}", ok()),
    Case("sub", "aeron-spy:aeron:udp?endpoint=localhost", refused(1, 'endpoint')),  # java.lang.IllegalArgumentException: The 'port' portion of the address is required
    Case("sub", "aeron-spy:aeron:udp", refused(1, 'at least one of endpoint')),  # java.lang.IllegalArgumentException: Aeron URIs for UDP must specify an endpoint address, c
    Case("sub", "aeron-spy:aeron:udp?endpoint=localhost:{port}|session-id=x", refused(0, 'session-id')),  # NumberFormatException : For input string: "x"
    Case("sub", "aeron-spy:aeron-spy:aeron:udp?endpoint=localhost:{port}", refused(1, "must start with 'aeron:'")),  # java.lang.IllegalArgumentException: Aeron URIs must start with 'aeron:', found: 'aeron-spy
    Case("sub", "aeron:udp?control-mode=manual", ok()),
    Case("sub", "aeron:udp?control-mode=foo", ok()),
    Case("sub", "aeron:udp?endpoint=localhost:{port}|reliable=FALSE", ok()),
    Case("sub", "aeron:udp?endpoint=localhost:{port}|sparse=TRUE", ok()),
    Case("sub", "aeron:udp?endpoint=localhost:{port}|session-id=2147483648", refused(0, 'session-id')),  # NumberFormatException : For input string: "2147483648"
    Case("pub", "aeron:udp?endpoint=[::1]:{port}|interface=[::1]", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=[0:0:0:0:0:0:0:1]:{port}", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=[::1%lo]:{port}", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:udp?endpoint=[::1]:{port}|interface=[::1]/200", ok(term=1048576, mtu=1408)),
    Case("xpub", "aeron:ipc?term-length=64k|init-term-id=5|term-id=7|term-offset=64|session-id=9", ok(term=65536, mtu=1408, session=9, initial=5, position=131136)),
    Case("pub", "aeron:ipc?mtu=1408|mtu=", refused(0, 'mtu')),  # StringIndexOutOfBoundsException : String index out of range: -1
    Case("pub", "aeron:ipc?linger=9223372036854775807", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=-9223372036854775808", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?linger=9223372036854775808ns", ok(term=1048576, mtu=1408)),
    Case("pub", "aeron:ipc?term-length=9007199254740991k", refused(0, 'term-length')),  # NumberFormatException : term-length would overflow long: 9007199254740991k
    Case("pub", "aeron:ipc?term-length=9007199254740992k", refused(0, 'term-length')),  # NumberFormatException : term-length would overflow long: 9007199254740992k
    Case("pub", "aeron:ipc?term-length=64k|mtu=8k|session-id=11|linger=0|sparse=true|tags=3,33|alias=x", ok(term=65536, mtu=8192, session=11)),
    Case("keep", "aeron:udp?endpoint=localhost:{port}|tags=1001,7|mtu=2k|term-length=128k|session-id=77", ok(term=131072, mtu=2048, session=77), stream=7),
    Case("pub", "aeron:udp?endpoint=localhost:{port2}|session-id=tag:7", ok(term=131072, mtu=2048, session=77), stream=7),
    Case("pub", "aeron:udp?endpoint=localhost:{port2}|session-id=tag:+7", refused(0, 'session-id'), stream=7),  # NumberFormatException : '+' is not a valid digit @ 4
    Case("pub", "aeron:udp?endpoint=localhost:{port2}|session-id=tag:7|mtu=2k", ok(term=131072, mtu=2048, session=77), stream=7),
    Case("pub", "aeron:udp?endpoint=localhost:{port2}|session-id=tag:7|mtu=4k", refused(0, 'mtu'), stream=7),  # IllegalArgumentException : mtu=4096 does not match session-id tag value
    Case("pub", "aeron:udp?endpoint=localhost:{port2}|session-id=tag:7|term-length=64k", refused(0, 'term-length'), stream=7),  # IllegalArgumentException : term-length=65536 does not match session-id tag value
    Case("pub", "aeron:ipc?session-id=tag:7", ok(term=131072, mtu=2048, session=77), stream=7),
    Case("pub", "aeron:ipc?tags=2,7", refused(0, 'entity tag 7'), stream=7),  # IllegalArgumentException : 7 entityTag already in use
    Case("pub", "aeron:udp?tags=1001", ok(term=1048576, mtu=1408), stream=7),
    Case("pub", "aeron:udp?tags=1001|mtu=2k", ok(term=1048576, mtu=2048), stream=7),
    Case("pub", "aeron:udp?tags=1001|mtu=4k", ok(term=1048576, mtu=4096), stream=7),
    Case("pub", "aeron:udp?tags=1001|session-id=77", refused(0, 'session id'), stream=7),  # IllegalStateException : existing publication has same session id: 77
    Case("pub", "aeron:udp?tags=1001|session-id=78", ok(term=1048576, mtu=1408, session=78), stream=7),
    Case("pub", "aeron:udp?tags=1001|endpoint=localhost:{port}", ok(term=131072, mtu=2048), stream=7),
    Case("pub", "aeron:udp?endpoint=localhost:{port}|term-length=128k", ok(term=131072, mtu=2048), stream=7),
    Case("pub", "aeron:udp?endpoint=localhost:{port}|term-length=64k", refused(0, 'term-length'), stream=7),  # IllegalStateException : existing publication has different term length: existing=131072 re
]
# fmt: on


def channels(ports: dict[str, int]) -> list[tuple[str, int, str]]:
    """(kind, stream id, channel) of every case, with the ports filled in."""
    values = dict(ports, wrapped_port=ports["port"] + 2**32)
    return [
        (case.kind, case.stream if case.stream is not None else 1000 + index, case.channel.format(**values))
        for index, case in enumerate(CASES)
    ]


def free_ports() -> dict[str, int]:
    return {"port": free_port("udp"), "port2": free_port("udp"), "port3": free_port("udp")}


def observed_matches(case: Case, accepted: bool, values: dict[str, int], code: int | None) -> bool:
    """Whether what a driver did (as a client saw it) is the case's expected outcome."""
    expected = case.expected
    if accepted != expected.accepted:
        return False
    if not accepted:
        return code == expected.code
    return all(values.get(name) == value for name, value in expected.values.items())


@pytest.fixture
def aeron(tmp_path: Path) -> Iterator[Aeron]:
    aeron_dir = new_aeron_dir(tmp_path)
    with (
        embedded_driver(
            aeron_dir,
            term_buffer_length=TERM_LENGTH,
            ipc_term_buffer_length=TERM_LENGTH,
            term_buffer_sparse_file=True,
            publication_linger_timeout_ns=60_000_000_000,
        ),
        Aeron.connect(aeron_dir=str(aeron_dir), timeout_s=10.0) as client,
    ):
        yield client


def add(
    aeron: Aeron, kind: str, stream_id: int, channel: str
) -> tuple[bool, dict[str, int], int | None, str]:
    """Add as ChannelChecks.java does: (accepted, values seen, error code, error message)."""
    try:
        if kind == "sub":
            aeron.add_subscription(channel, stream_id).close()
            return True, {}, None, ""
        if kind == "xpub":
            publication = aeron.add_exclusive_publication(channel, stream_id)
        else:
            publication = aeron.add_publication(channel, stream_id)
    except RegistrationError as error:
        return False, {}, error.code, error.driver_message
    values = {
        "term": publication.term_length,
        "mtu": publication.mtu_length,
        "session": publication.session_id,
        "initial": publication.initial_term_id,
        "position": publication.position,
    }
    if kind != "keep":
        publication.close()
    return True, values, None, ""


def test_every_case_has_the_1_15_1_outcome_and_refusals_name_the_parameter(aeron: Aeron) -> None:
    wrong = []
    for case, (kind, stream_id, channel) in zip(CASES, channels(free_ports()), strict=True):
        accepted, values, code, message = add(aeron, kind, stream_id, channel)
        if not observed_matches(case, accepted, values, code):
            wrong.append(
                f"{kind} {channel}: expected {case.expected}, got {accepted} {values} {code} {message}"
            )
        elif not accepted and case.expected.names not in message:
            wrong.append(f"{kind} {channel}: the message does not name {case.expected.names!r}: {message}")
    assert not wrong, "\n".join(wrong)


def test_a_channel_tag_shares_the_endpoint_and_its_publication(aeron: Aeron) -> None:
    port = free_port("udp")
    tagged = aeron.add_publication(f"aeron:udp?endpoint=127.0.0.1:{port}|tags=4", 2)
    by_tag = aeron.add_publication("aeron:udp?tags=4", 2)
    assert by_tag.session_id == tagged.session_id  # the same publication, found through the tagged endpoint
    with pytest.raises(RegistrationError, match="tags=4 matches an existing channel by tag"):
        aeron.add_publication("aeron:udp?tags=4|endpoint=127.0.0.1:1", 3)


def test_a_tagged_subscription_receives_on_the_tagged_endpoint(aeron: Aeron) -> None:
    port = free_port("udp")
    with_address = aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}|tags=9", 1)
    by_tag = aeron.add_subscription("aeron:udp?tags=9", 1)
    aeron.add_publication(f"aeron:udp?endpoint=127.0.0.1:{port}", 1)
    wait_for(lambda: with_address.images and by_tag.images, 10.0, "an image on both subscriptions")
