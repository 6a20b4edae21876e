"""Channel URI grammar (docs/uri.md §1), parameter names (§2) and the builder order (§5).

Cases marked "jar" were checked against io.aeron.ChannelUri.parse of the real aeron-all-1.15.1.jar.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from driver.protocol import channel_uri as cu
from driver.protocol.channel_uri import ChannelUri, InvalidChannelError, build_channel
from driver.protocol.control_protocol import ErrorCode

# --- parsing ---------------------------------------------------------------------------------------------


def test_parse_udp_with_params() -> None:
    uri = ChannelUri.parse("aeron:udp?endpoint=localhost:40123|interface=192.168.1.0/24|mtu=8k")
    assert uri.prefix == ""
    assert uri.media == "udp"
    assert uri.params == {"endpoint": "localhost:40123", "interface": "192.168.1.0/24", "mtu": "8k"}
    assert uri.original == "aeron:udp?endpoint=localhost:40123|interface=192.168.1.0/24|mtu=8k"
    assert uri.is_udp and not uri.is_ipc and not uri.is_spy
    assert uri.get("mtu") == "8k"
    assert uri.get("ttl") is None
    assert uri.get("ttl", "0") == "0"
    assert "endpoint" in uri and "ttl" not in uri
    assert dict(uri) == uri.params


def test_parse_ipc_without_params() -> None:
    uri = ChannelUri.parse("aeron:ipc")
    assert (uri.prefix, uri.media, uri.params) == ("", "ipc", {})
    assert uri.is_ipc and not uri.is_udp
    assert str(uri) == "aeron:ipc"


def test_parse_spy_prefix() -> None:  # jar: prefix=aeron-spy media=udp
    uri = ChannelUri.parse("aeron-spy:aeron:udp?endpoint=x:1")
    assert uri.prefix == "aeron-spy"
    assert uri.is_spy and uri.is_udp
    assert str(uri) == "aeron-spy:aeron:udp?endpoint=x:1"


@pytest.mark.parametrize(
    ("text", "params"),
    [
        ("aeron:udp?a=1|a=2", {"a": "2"}),  # jar: later duplicate wins
        ("aeron:udp?a=", {"a": ""}),  # jar: empty value allowed
        ("aeron:udp?=5", {"": "5"}),  # jar: empty key allowed by 1.15.1's grammar
        ("aeron:udp?x=y=z:q", {"x": "y=z:q"}),  # jar: values may hold '=' and ':'
        ("aeron:udp?mtu|endpoint=x:1", {"mtu|endpoint": "x:1"}),  # jar: a key runs to the first '='
        ("aeron:udp?a=1?b=2", {"a": "1?b=2"}),  # only the first '?' starts the parameters
        ("aeron:udp?a=1|b=|c=3", {"a": "1", "b": "", "c": "3"}),
        ("aeron:udp?session-id=tag:5", {"session-id": "tag:5"}),
    ],
)
def test_grammar_corner_cases(text: str, params: dict[str, str]) -> None:
    assert ChannelUri.parse(text).params == params


def test_duplicate_key_keeps_first_position() -> None:
    uri = ChannelUri.parse("aeron:udp?a=1|b=2|a=3")
    assert str(uri) == "aeron:udp?a=3|b=2"
    assert uri.original == "aeron:udp?a=1|b=2|a=3"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (  # jar: "no more input found, state=PARAMS_KEY"
            "aeron:udp?endpoint=localhost:40123|mtu",
            "aeron:udp?endpoint=localhost:40123|mtu: parameter 'mtu' has no '=' (at offset 38)",
        ),
        ("aeron:udp?", "aeron:udp?: '?' is not followed by a parameter (at offset 10)"),  # jar: error
        ("aeron:udp?a=1|", "aeron:udp?a=1|: '|' is not followed by a parameter (at offset 14)"),  # jar: error
        (  # jar: "encountered ':' within media definition"
            "aeron:ud:p",
            "aeron:ud:p: ':' is not allowed in the media name 'ud:p' (at offset 8)",
        ),
        (  # jar: "Aeron URIs must start with 'aeron:'"
            "aeron-spy:udp",
            "aeron-spy:udp: a channel URI must start with 'aeron:' after 'aeron-spy:', found 'udp' (at offset 10)",
        ),
        (  # jar: scheme is case-sensitive
            "Aeron:udp",
            "Aeron:udp: a channel URI must start with 'aeron:' (or 'aeron-spy:aeron:'), found 'Aeron:' (at offset 0)",
        ),
        ("", ": a channel URI must start with 'aeron:' (or 'aeron-spy:aeron:'), found '' (at offset 0)"),
        ("aeron:tcp?endpoint=x:1", "aeron:tcp?endpoint=x:1: media 'tcp' is not supported: use udp or ipc"),
        ("aeron:", "aeron:: media '' is not supported: use udp or ipc"),
        ("aeron:UDP", "aeron:UDP: media 'UDP' is not supported: use udp or ipc"),
    ],
)
def test_grammar_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidChannelError) as info:
        ChannelUri.parse(text)
    assert str(info.value) == message
    assert info.value.uri == text
    assert info.value.error_code == ErrorCode.INVALID_CHANNEL
    assert isinstance(info.value, ValueError)


def test_any_media_with_allowed_media_none() -> None:  # jar: 1.15.1's ChannelUri accepts any media
    assert ChannelUri.parse("aeron:tcp?x=y=z:q", allowed_media=None).media == "tcp"
    assert ChannelUri.parse("aeron:", allowed_media=None).media == ""
    with pytest.raises(InvalidChannelError, match="':' is not allowed"):
        ChannelUri.parse("aeron:a:b", allowed_media=None)


def test_equality_ignores_original() -> None:
    assert ChannelUri.parse("aeron:udp?a=1|a=2") == ChannelUri.parse("aeron:udp?a=2")
    assert ChannelUri.parse("aeron:udp?a=1") != ChannelUri.parse("aeron-spy:aeron:udp?a=1")
    assert ChannelUri.parse("aeron:udp?a=1") != ChannelUri.parse("aeron:ipc?a=1")


def test_tags() -> None:
    uri = ChannelUri.parse("aeron:udp?tags=1001,7")
    assert uri.tags == ("1001", "7")
    assert (uri.channel_tag, uri.entity_tag) == ("1001", "7")
    one = ChannelUri.parse("aeron:ipc?tags=5")
    assert (one.channel_tag, one.entity_tag) == ("5", None)
    none = ChannelUri.parse("aeron:ipc")
    assert (none.tags, none.channel_tag, none.entity_tag) == ((), None, None)
    assert ChannelUri.parse("aeron:ipc?tags=5,").tags == ("5", "")  # as ChannelUri.splitTags
    assert cu.is_tagged("tag:5") and not cu.is_tagged("5")


def test_every_parameter_of_uri_md_has_a_constant() -> None:
    assert set(cu.ALL_PARAM_NAMES) == {
        "endpoint",
        "interface",
        "control",
        "control-mode",
        "ttl",
        "mtu",
        "term-length",
        "init-term-id",
        "term-id",
        "term-offset",
        "session-id",
        "linger",
        "reliable",
        "sparse",
        "tags",
        "alias",
    }
    assert set(cu.BUILDER_PARAM_ORDER) == set(cu.ALL_PARAM_NAMES)
    assert (cu.MDC_CONTROL_MODE_MANUAL, cu.MDC_CONTROL_MODE_DYNAMIC) == ("manual", "dynamic")
    assert (cu.SPY_PREFIX, cu.IPC_CHANNEL, cu.TAG_PREFIX, cu.INVALID_TAG) == (
        "aeron-spy:",
        "aeron:ipc",
        "tag:",
        -1,
    )


# --- round trip ------------------------------------------------------------------------------------------

KEYS = st.text(st.characters(blacklist_characters="=", blacklist_categories=("Cs",)), max_size=12)
VALUES = st.text(st.characters(blacklist_characters="|", blacklist_categories=("Cs",)), max_size=20)
URIS = st.builds(
    ChannelUri,
    prefix=st.sampled_from(["", "aeron-spy"]),
    media=st.sampled_from(["udp", "ipc"]),
    params=st.dictionaries(KEYS | st.sampled_from(cu.ALL_PARAM_NAMES), VALUES, max_size=6),
)


@given(URIS)
def test_round_trip(uri: ChannelUri) -> None:
    text = str(uri)
    parsed = ChannelUri.parse(text)
    assert parsed == uri
    assert list(parsed.params) == list(uri.params)
    assert parsed.original == text
    assert str(parsed) == text


@given(st.text(max_size=40))
def test_arbitrary_text_parses_or_raises_invalid_channel(text: str) -> None:
    try:
        uri = ChannelUri.parse(text)
    except InvalidChannelError as ex:
        assert str(ex).startswith(f"{text}: ")
    else:
        assert ChannelUri.parse(str(uri)) == uri


# --- builder ---------------------------------------------------------------------------------------------


def test_build_channel_uses_the_java_builder_order() -> None:
    text = build_channel(
        "udp",
        sparse=True,
        alias="a",
        linger=5,
        reliable=False,
        ttl=4,
        session_id="tag:9",
        term_offset=64,
        term_id=3,
        init_term_id=2,
        term_length=65536,
        mtu=1408,
        control_mode="manual",
        control="localhost:40457",
        interface="127.0.0.1",
        endpoint="localhost:40456",
        tags="1,2",
    )
    assert text == (
        "aeron:udp?tags=1,2|endpoint=localhost:40456|interface=127.0.0.1|control=localhost:40457|"
        "control-mode=manual|mtu=1408|term-length=65536|init-term-id=2|term-id=3|term-offset=64|"
        "session-id=tag:9|ttl=4|reliable=false|linger=5|alias=a|sparse=true"
    )
    assert list(ChannelUri.parse(text).params) == list(cu.BUILDER_PARAM_ORDER)


def test_build_channel_details() -> None:
    assert build_channel("ipc") == "aeron:ipc"
    assert build_channel("ipc", mtu=None) == "aeron:ipc"
    assert build_channel("udp", prefix="aeron-spy", endpoint="x:1") == "aeron-spy:aeron:udp?endpoint=x:1"
    assert (
        build_channel("udp", **{"term-length": "64k", "endpoint": "x:1"})
        == "aeron:udp?endpoint=x:1|term-length=64k"
    )
    with pytest.raises(TypeError, match="unknown parameter 'group'"):
        build_channel("udp", group=True)
    with pytest.raises(ValueError, match=r"contains '\|'"):
        build_channel("udp", alias="a|b")
