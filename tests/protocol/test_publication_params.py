"""Publication / subscription parameters (docs/uri.md §2-3, docs/commands.md §7).

Values marked "jar" were checked against the real aeron-all-1.15.1.jar (PublicationParams,
SubscriptionParams, SystemUtil.parseSize/parseDuration and DriverConductor's validateMtuForMaxMessage).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from driver.protocol.channel_uri import ChannelUri, InvalidChannelError
from driver.protocol.control_protocol import ErrorCode
from driver.protocol.publication_params import (
    ExistingPublication,
    ParameterError,
    PublicationParams,
    SubscriptionParams,
    check_mtu_length,
    check_term_length,
    max_message_length,
    parse_duration_ns,
    parse_int32,
    parse_size,
    validate_shared_publication,
)
from driver.util.bit_util import to_int32
from driver.util.java_numbers import NumberFormatError, parse_java_long

UDP_DEFAULTS: dict[str, Any] = dict(
    default_term_length=16 * 1024 * 1024,
    default_mtu=1408,
    default_linger_ns=5_000_000_000,
    default_sparse=False,
)
IPC_DEFAULTS: dict[str, Any] = dict(UDP_DEFAULTS, default_term_length=64 * 1024 * 1024)
BASE = "aeron:udp?endpoint=localhost:40123"


def pub(params: str = "", *, exclusive: bool = False, **kwargs: Any) -> PublicationParams:
    return PublicationParams.from_uri(BASE + params, is_exclusive=exclusive, **(UDP_DEFAULTS | kwargs))


def pub_error(params: str, *, exclusive: bool = False, **kwargs: Any) -> str:
    with pytest.raises(InvalidChannelError) as info:
        pub(params, exclusive=exclusive, **kwargs)
    assert info.value.uri == BASE + params
    assert info.value.error_code == ErrorCode.GENERIC_ERROR  # what 1.15.1 sends for PublicationParams errors
    prefix = f"{BASE}{params}: "
    assert str(info.value).startswith(prefix)
    return str(info.value)[len(prefix) :]


# --- number parsing (agrona SystemUtil / Integer.parseInt) -----------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [  # jar: SystemUtil.parseSize
        ("64k", 65536),
        ("64K", 65536),
        ("1m", 1048576),
        ("1M", 1048576),
        ("1g", 1073741824),
        ("1G", 1073741824),
        ("100", 100),
        ("+100", 100),
        ("-1k", -1024),
        ("0", 0),
        ("k", 0),  # jar: parseLongAscii of "" is 0
        ("2g", -(2**31)),  # jar: (int) cast of 2147483648
        ("2147483648", -(2**31)),
        ("4294968320", 1024),  # jar: mtu=4294968320 is an mtu of 1024
        ("4194368k", 65536),
    ],
)
def test_parse_size(text: str, value: int) -> None:
    assert parse_size("p", text) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1t", "p=1t should end with a digit or one of k, m, g (either case)"),  # jar: error
        ("1.5k", "p=1.5k: '.' is not a digit (only ASCII digits, '-' in front)"),  # jar: error
        (" 1k", "p= 1k: ' ' is not a digit (only ASCII digits, '-' in front)"),  # jar: error
        ("+1k", "p=+1k: '+' is not a digit (only ASCII digits, '-' in front)"),  # jar: error
        ("", "p= is empty: expected a size such as 65536, 64k, 16m or 1g"),  # jar: error
        ("0x10", "p=0x10 is not a 64-bit integer (an optional sign and decimal digits)"),  # jar: error
        ("9223372036854775808", "p=9223372036854775808 is out of range for a 64-bit integer"),  # jar: error
        ("9007199254740992k", "p=9007199254740992k would overflow a 64-bit long"),  # jar: error
        ("1_000", "p=1_000 is not a 64-bit integer (an optional sign and decimal digits)"),
    ],
)
def test_parse_size_errors(text: str, message: str) -> None:
    with pytest.raises(ParameterError) as info:
        parse_size("p", text)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("text", "value"),
    [  # jar: SystemUtil.parseDuration
        ("5s", 5_000_000_000),
        ("5S", 5_000_000_000),
        ("5ms", 5_000_000),
        ("5Ms", 5_000_000),
        ("5us", 5_000),
        ("5ns", 5),
        ("5", 5),
        ("+5", 5),
        ("-5ms", -5_000_000),
        ("9223372036854775807s", 2**63 - 1),
        ("ms", 0),
        ("ns", 0),
        ("-ms", 0),
        ("99999999999999999999s", 2**63 - 1),  # jar: parseLongAscii wraps, toNanos saturates
    ],
)
def test_parse_duration(text: str, value: int) -> None:
    assert parse_duration_ns("p", text) == value


@pytest.mark.parametrize("text", ["5xs", "5m", "s", "-s", "", "5 s", "1.5s", "+5s", "99999999999999999999"])
def test_parse_duration_errors(text: str) -> None:  # jar: all refused
    with pytest.raises(ParameterError, match=r"^p="):
        parse_duration_ns("p", text)


def test_parse_int() -> None:
    assert parse_int32("x", "2147483647") == 2**31 - 1
    assert parse_int32("x", "-2147483648") == -(2**31)
    assert parse_int32("x", "+5") == 5  # jar: session-id=+5 is accepted
    with pytest.raises(ParameterError, match=r"^x=2147483648 is out of range for a 32-bit integer"):
        parse_int32("x", "2147483648")  # jar: NumberFormatException
    with pytest.raises(ParameterError, match=r"^x=1e3 is not a 32-bit integer"):
        parse_int32("x", "1e3")
    with pytest.raises(ParameterError, match=r"^x= 1 is not a 32-bit integer"):
        parse_int32("x", " 1")
    assert parse_java_long("x", "9223372036854775807") == 2**63 - 1
    with pytest.raises(NumberFormatError, match="out of range for a 64-bit integer"):
        parse_java_long("x", "9223372036854775808")


@given(st.integers(-(2**31), 2**31 - 1))
def test_parse_int32_round_trip(value: int) -> None:
    assert parse_int32("x", str(value)) == value


@given(st.integers(-(2**21), 2**21 - 1), st.sampled_from(["", "k", "K", "m", "g"]))
def test_parse_size_property(number: int, suffix: str) -> None:
    scale = {"": 1, "k": 1024, "K": 1024, "m": 1024**2, "g": 1024**3}[suffix]
    value = number * scale
    assert parse_size("p", f"{number}{suffix}") == to_int32(value)  # Java's (int) cast


# --- the rules on their own ------------------------------------------------------------------------------


def test_check_term_length_boundaries() -> None:
    for ok in (65536, 1 << 20, 1 << 30):
        check_term_length(ok)
    with pytest.raises(
        ParameterError, match=r"^term-length=32768 is less than the minimum term length 65536"
    ):
        check_term_length(32768)
    with pytest.raises(ParameterError, match=r"^term-length=2147483648 is more than the maximum term length"):
        check_term_length(1 << 31)
    with pytest.raises(ParameterError, match=r"^term-length=98304 is not a power of two$"):
        check_term_length(98304)


def test_check_mtu_length_boundaries() -> None:
    for ok in (32, 1408, 65504):
        check_mtu_length(ok)
    for bad in (0, 65536):
        with pytest.raises(ParameterError, match=r"must be >= 32 \(header length\) and <= 65504"):
            check_mtu_length(bad)
    with pytest.raises(ParameterError, match=r"^mtu=33 must be a multiple of 32 \(frame alignment\)$"):
        check_mtu_length(33)


def test_max_message_length() -> None:
    assert max_message_length(65536) == 8192
    assert max_message_length(128 * 1024 * 1024) == 16 * 1024 * 1024  # 16 MiB cap
    assert max_message_length(1 << 30) == 16 * 1024 * 1024


# --- publications: defaults and each parameter -----------------------------------------------------------


def test_defaults_udp() -> None:  # jar: tl=16777216 mtu=1408 linger=5000000000 sparse=false
    params = pub()
    assert (params.term_length, params.mtu_length, params.linger_ns, params.is_sparse) == (
        16 * 1024 * 1024,
        1408,
        5_000_000_000,
        False,
    )
    assert params.session_id is None and not params.has_session_id and not params.is_session_id_tagged
    assert params.entity_tag is None and params.session_id_tag is None
    assert not params.is_replay and params.init_term_id is None
    assert not params.has_explicit_mtu and not params.has_explicit_term_length
    assert params.channel == BASE


def test_defaults_ipc_and_string_or_parsed_uri() -> None:
    for uri in ("aeron:ipc", ChannelUri.parse("aeron:ipc")):
        params = PublicationParams.from_uri(uri, is_exclusive=False, **IPC_DEFAULTS)
        assert params.term_length == 64 * 1024 * 1024
        assert params.channel == "aeron:ipc"


def test_explicit_values() -> None:  # jar: term-length=64k|mtu=8k → tl=65536 mtu=8192
    params = pub("|term-length=64k|mtu=8k|linger=10ms|sparse=true|session-id=-7|tags=3,1001")
    assert (params.term_length, params.mtu_length, params.linger_ns, params.is_sparse) == (
        65536,
        8192,
        10_000_000,
        True,
    )
    assert params.session_id == -7 and params.has_session_id and not params.is_session_id_tagged
    assert params.entity_tag == 1001
    assert params.has_explicit_mtu and params.has_explicit_term_length


def test_term_length_boundaries() -> None:
    assert pub("|term-length=65536").term_length == 65536
    assert pub("|term-length=1g|mtu=65504").term_length == 1 << 30  # jar: accepted
    assert pub_error("|term-length=32k") == (  # jar: less than min
        "term-length=32k (32768) is less than the minimum term length 65536 (64k)"
    )
    assert (
        pub_error("|term-length=65535")
        == "term-length=65535 is less than the minimum term length 65536 (64k)"
    )  # jar
    assert pub_error("|term-length=96k") == "term-length=96k (98304) is not a power of two"  # jar: error
    assert (
        pub_error("|term-length=2g")
        == "term-length=2g (-2147483648) is less than the minimum term length 65536 (64k)"
    )
    assert (
        pub_error("|term-length=abc")
        == "term-length=abc should end with a digit or one of k, m, g (either case)"
    )


def test_mtu_boundaries() -> None:
    assert pub("|mtu=32").mtu_length == 32  # jar
    assert pub("|mtu=65504|term-length=1m").mtu_length == 65504  # jar
    assert pub_error("|mtu=0") == "mtu=0 must be >= 32 (header length) and <= 65504 (max UDP payload)"  # jar
    assert (
        pub_error("|mtu=16") == "mtu=16 must be >= 32 (header length) and <= 65504 (max UDP payload)"
    )  # jar
    assert (
        pub_error("|mtu=65536") == "mtu=65536 must be >= 32 (header length) and <= 65504 (max UDP payload)"
    )  # jar
    assert pub_error("|mtu=65505|term-length=1m") == (
        "mtu=65505 must be >= 32 (header length) and <= 65504 (max UDP payload)"
    )
    assert pub_error("|mtu=33") == "mtu=33 must be a multiple of 32 (frame alignment)"  # jar
    assert pub("|mtu=4294968320").mtu_length == 1024  # jar: (int) cast wraps it to 1024


def test_mtu_against_max_message_length() -> None:
    assert pub("|term-length=64k|mtu=8k").mtu_length == 8192  # jar: accepted
    assert pub_error("|term-length=64k|mtu=8224") == (  # jar: MTU greater than max message length
        "mtu=8224 is greater than the max message length 8192 for term length 65536 "
        "(min(term length / 8, 16 MiB))"
    )
    # the default mtu counts too
    assert pub("|term-length=64k", default_mtu=8192).mtu_length == 8192
    assert pub_error("|term-length=64k", default_mtu=8224).startswith("mtu=8224 is greater than")


def test_linger() -> None:
    assert pub("|linger=0").linger_ns == 0  # jar
    assert pub("|linger=10ms").linger_ns == 10_000_000  # jar
    assert pub("|linger=7").linger_ns == 7
    assert pub("|linger=-1").linger_ns == -1  # jar: accepted, the publication lingers not at all


def test_negative_linger_from_the_1_15_1_archive_is_accepted() -> None:
    # 1.15.1's ChannelUriStringBuilder writes linger as an int: the Archive's replay.linger.timeout=3s arrives
    # as linger=-1294967296, which the 1.15.1 driver takes as is.
    three_s_as_int = (3_000_000_000 + 2**31) % 2**32 - 2**31
    assert three_s_as_int == -1294967296
    assert pub(f"|linger={three_s_as_int}").linger_ns == -1294967296
    assert pub(f"|linger={three_s_as_int}", exclusive=True).linger_ns == -1294967296
    assert pub("|linger=-5ms").linger_ns == -5_000_000
    assert (
        pub_error("|linger=5m") == "linger=5m should end with a digit or one of s, ms, us, ns (either case)"
    )


def test_sparse_only_exact_true() -> None:
    assert pub("|sparse=true").is_sparse  # jar
    assert not pub("|sparse=TRUE").is_sparse  # jar: only "true"
    assert not pub("|sparse=false", default_sparse=True).is_sparse
    assert not pub("|sparse=yes", default_sparse=True).is_sparse
    assert pub("", default_sparse=True).is_sparse


def test_session_id() -> None:
    assert pub("|session-id=2147483647").session_id == 2**31 - 1
    assert pub("|session-id=-2147483648").session_id == -(2**31)
    assert pub("|session-id=+5").session_id == 5  # jar
    assert pub_error("|session-id=2147483648") == (  # jar: NumberFormatException
        "session-id=2147483648 is out of range for a 32-bit integer (-2147483648..2147483647)"
    )
    assert pub_error("|session-id=abc") == (
        "session-id=abc is not a 32-bit integer (an optional sign and decimal digits)"
    )


# --- tags ------------------------------------------------------------------------------------------------


def test_entity_tag() -> None:
    assert pub("|tags=1").entity_tag is None  # only a channel tag
    assert pub("|tags=1,2").entity_tag == 2
    assert pub("|tags=1,-2").entity_tag == -2
    assert pub_error("|tags=1,-1") == "tags=1,-1: entity tag -1 is reserved"  # jar: "-1 tag is reserved"
    assert pub_error("|tags=1,x") == "tags=1,x: entity tag 'x' (the 2nd tag) is not a 64-bit integer"  # jar
    assert pub_error("|tags=1,7", is_entity_tag_in_use=lambda tag: tag == 7) == (
        "tags=1,7: entity tag 7 is already used by another publication"
    )
    assert pub("|tags=1,8", is_entity_tag_in_use=lambda tag: tag == 7).entity_tag == 8


TAGGED = ExistingPublication(session_id=77, mtu_length=4096, term_length=128 * 1024)


def find_by_tag(tag: int) -> ExistingPublication | None:
    return TAGGED if tag == 9 else None


def test_session_id_tag_reuses_the_tagged_publication() -> None:
    params = pub("|session-id=tag:9", find_network_publication_by_tag=find_by_tag)
    assert params.is_session_id_tagged and params.session_id_tag == 9
    assert (params.session_id, params.mtu_length, params.term_length) == (77, 4096, 128 * 1024)
    same = pub("|session-id=tag:9|term-length=128k|mtu=4k", find_network_publication_by_tag=find_by_tag)
    assert (same.session_id, same.mtu_length, same.term_length) == (77, 4096, 128 * 1024)


def test_session_id_tag_errors() -> None:
    missing = (
        "session-id=tag:5 must reference a network publication with entity tag 5 (set by its "
        "tags=<channel tag>,5), and there is none"
    )
    assert pub_error("|session-id=tag:5", find_network_publication_by_tag=find_by_tag) == missing
    assert pub_error("|session-id=tag:5") == missing  # no lookup: nothing is tagged
    assert pub_error("|session-id=tag:9|term-length=64k", find_network_publication_by_tag=find_by_tag) == (
        "term-length=64k does not match the term length 131072 of the publication referenced by session-id=tag:9"
    )
    assert pub_error("|session-id=tag:9|mtu=1408", find_network_publication_by_tag=find_by_tag) == (
        "mtu=1408 does not match the mtu 4096 of the publication referenced by session-id=tag:9"
    )
    assert pub_error("|session-id=tag:") == "session-id=tag:: no number after 'tag:'"  # jar: error
    assert pub_error("|session-id=tag:x") == (
        "session-id=tag:x: 'x' is not a digit (only ASCII digits, '-' in front)"
    )
    assert pub_error("|session-id=tag:+9", find_network_publication_by_tag=find_by_tag) == (  # jar: error
        "session-id=tag:+9: '+' is not a digit (only ASCII digits, '-' in front)"
    )


# --- exclusive publication position ----------------------------------------------------------------------


def test_position_only_for_exclusive() -> None:  # jar: a shared pub ignores an incomplete set
    shared = pub("|init-term-id=0|term-id=0")
    assert not shared.is_replay and shared.init_term_id is None
    params = pub("|init-term-id=5|term-id=7|term-offset=64", exclusive=True)
    assert params.is_replay
    assert (params.init_term_id, params.term_id, params.term_offset) == (5, 7, 64)


@pytest.mark.parametrize(
    "partial", ["|init-term-id=5|term-id=5", "|term-offset=0", "|term-id=1|term-offset=0"]
)
def test_position_needs_all_three(partial: str) -> None:  # jar: "params must be used as a complete set"
    assert "init-term-id, term-id, term-offset must be used as a complete set" in pub_error(
        partial, exclusive=True
    )


def test_position_message_names_what_is_missing() -> None:
    assert pub_error("|init-term-id=5|term-id=5", exclusive=True) == (
        "init-term-id, term-id, term-offset must be used as a complete set: init-term-id=5, term-id=5 given "
        "without term-offset"
    )


def test_term_offset_boundaries() -> None:
    full = pub("|init-term-id=0|term-id=0|term-offset=16777216", exclusive=True)  # jar: == term length is ok
    assert full.term_offset == 16 * 1024 * 1024
    assert pub("|init-term-id=0|term-id=0|term-offset=0", exclusive=True).term_offset == 0
    assert pub_error("|init-term-id=0|term-id=0|term-offset=16777248", exclusive=True) == (  # jar
        "term-offset=16777248 is greater than the term length 16777216"
    )
    assert pub_error("|init-term-id=0|term-id=0|term-offset=-32", exclusive=True) == (  # jar
        "term-offset=-32 is out of range (0..1073741824)"
    )
    assert pub_error("|init-term-id=0|term-id=0|term-offset=48", exclusive=True) == (  # jar
        "term-offset=48 must be a multiple of 32 (frame alignment)"
    )
    # jar: the term length checked against is the explicit one
    assert pub_error("|term-length=64k|init-term-id=0|term-id=0|term-offset=65568", exclusive=True) == (
        "term-offset=65568 is greater than the term length 65536"
    )


def test_term_id_difference_with_32_bit_wrap() -> None:
    same = pub("|init-term-id=5|term-id=5|term-offset=0", exclusive=True)
    assert same.term_id == 5
    # jar: init=2147483647, term=-2147483648 is accepted (difference 1 after wrap-around)
    wrapped = pub("|init-term-id=2147483647|term-id=-2147483648|term-offset=0", exclusive=True)
    assert (wrapped.init_term_id, wrapped.term_id) == (2**31 - 1, -(2**31))
    assert pub_error("|init-term-id=5|term-id=4|term-offset=0", exclusive=True) == (  # jar: error
        "term-id=4 is behind init-term-id=5: term-id - init-term-id (32-bit wrap-around) must not be negative"
    )
    # jar: init=-2147483648, term=2147483647 is rejected (difference -1 after wrap-around)
    assert "is behind" in pub_error(
        "|init-term-id=-2147483648|term-id=2147483647|term-offset=0", exclusive=True
    )
    assert pub_error("|init-term-id=x|term-id=0|term-offset=0", exclusive=True) == (
        "init-term-id=x is not a 32-bit integer (an optional sign and decimal digits)"
    )


# --- shared publication re-add ---------------------------------------------------------------------------

EXISTING = ExistingPublication(session_id=42, mtu_length=1408, term_length=16 * 1024 * 1024)


def test_shared_publication_matches() -> None:
    validate_shared_publication(EXISTING, pub())
    validate_shared_publication(EXISTING, pub("|mtu=1408|term-length=16m|session-id=42"))
    # not given explicitly → not compared, even when the defaults differ
    validate_shared_publication(EXISTING, pub("", default_mtu=4096, default_term_length=1 << 20))


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ("|mtu=4096", "mtu=4096 differs from the existing shared publication's mtu 1408"),
        (
            "|term-length=64k",
            "term-length=65536 differs from the existing shared publication's term length 16777216",
        ),
        ("|session-id=43", "session-id=43 differs from the existing shared publication's session id 42"),
    ],
)
def test_shared_publication_mismatch(params: str, reason: str) -> None:
    with pytest.raises(InvalidChannelError) as info:
        validate_shared_publication(EXISTING, pub(params))
    assert str(info.value) == (
        f"{BASE}{params}: {reason}: omit it or use the same value, or add an exclusive publication"
    )
    assert info.value.error_code == ErrorCode.GENERIC_ERROR


# --- subscriptions ---------------------------------------------------------------------------------------


def sub(params: str = "", **kwargs: Any) -> SubscriptionParams:
    return SubscriptionParams.from_uri(BASE + params, **kwargs)


def test_subscription_defaults() -> None:
    params = sub()
    assert params.session_id is None and not params.has_session_id
    assert params.is_reliable and not params.is_sparse
    assert params.tags == () and not params.has_join_position
    assert params.channel == BASE
    assert not sub(default_reliable=False).is_reliable
    assert sub(default_sparse=True).is_sparse


def test_subscription_values() -> None:
    params = sub("|reliable=false|session-id=7|sparse=true|tags=1001,2")  # jar: sid=7 rel=false
    assert (params.session_id, params.is_reliable, params.is_sparse, params.tags) == (
        7,
        False,
        True,
        ("1001", "2"),
    )
    assert sub("|reliable=FALSE").is_reliable  # jar: only exact "false"
    assert sub("|reliable=no").is_reliable  # jar
    assert sub("|reliable=true", default_reliable=False).is_reliable
    assert not sub("|sparse=TRUE", default_sparse=True).is_sparse
    ipc = SubscriptionParams.from_uri("aeron:ipc?session-id=-3")
    assert ipc.session_id == -3


def test_subscription_join_position_is_validated() -> None:
    params = sub("|init-term-id=0|term-id=0|term-offset=1073741824")  # jar: join=true
    assert params.has_join_position and params.term_offset == 1 << 30
    for partial, reason in [
        (
            "|init-term-id=0",
            "init-term-id, term-id, term-offset must be used as a complete set: init-term-id=0 "
            "given without term-id, term-offset",
        ),  # jar
        (
            "|init-term-id=0|term-id=0|term-offset=1073741856",
            "term-offset=1073741856 is out of range (0..1073741824)",
        ),
        (
            "|init-term-id=1|term-id=0|term-offset=0",  # jar
            "term-id=0 is behind init-term-id=1: term-id - init-term-id (32-bit wrap-around) must not be negative",
        ),
    ]:
        with pytest.raises(InvalidChannelError) as info:
            sub(partial)
        assert str(info.value) == f"{BASE}{partial}: {reason}"
        assert info.value.error_code == ErrorCode.GENERIC_ERROR


def test_subscription_session_id_errors() -> None:
    with pytest.raises(InvalidChannelError) as info:
        sub("|session-id=tag:1")  # jar: NumberFormatException
    assert info.value.reason == (
        "session-id=tag:1: a subscription takes a plain 32-bit session id ('tag:' is only for publications)"
    )
    with pytest.raises(InvalidChannelError, match=r"session-id=2147483648 is out of range"):
        sub("|session-id=2147483648")
