"""Publication and subscription parameters of a channel URI, validated as Aeron 1.15.1 does.

Mirrors ``io.aeron.driver.PublicationParams`` / ``SubscriptionParams`` and the checks the conductor adds
(``validateMtuForMaxMessage``, ``confirmMatch``) — docs/uri.md §2-3, docs/commands.md §7. Driver defaults are
passed in, and lookups into the conductor's state (publications by tag) are callables, so this stays sans-IO.

Numbers are parsed by the Java parser 1.15.1 uses for each (driver/util/java_numbers.py): ``Integer.parseInt``
for session-id and the join position, ``Long.parseLong`` for the entity tag, ``parseLongAscii`` for
``session-id=tag:n``, agrona's ``SystemUtil.parseSize`` for mtu and term-length (then cut to 32 bits like
Java's ``(int)`` cast, so ``mtu=4294968320`` is 1024 and ``term-length=k`` is 0, refused by the range check)
and ``SystemUtil.parseDuration`` for linger (``linger=ms`` is 0). ``sparse`` is true only for ``true`` and a
subscription is unreliable only for ``reliable=false``: any other value is the other meaning, never an
error. The behaviour of each form was checked against the 1.15.1 driver (tests/protocol/test_wire_tolerance.py).

Every error is an :class:`InvalidChannelError` naming the parameter, its value and the rule broken. Its
``error_code`` is GENERIC_ERROR, which is what 1.15.1 sends for these (they are not wrapped in an
``InvalidChannelException`` there).

A negative ``linger`` is accepted, as 1.15.1 does (its check compares the value with itself): the publication
then lingers not at all. 1.15.1's own Archive sends one: its ``ChannelUriStringBuilder`` writes linger as a
32-bit int, so ``aeron.archive.replay.linger.timeout=3s`` asks for ``linger=-1294967296`` on every replay.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from driver.protocol.channel_uri import (
    CONTROL_MODE_RESPONSE,
    INITIAL_TERM_ID_PARAM_NAME,
    INVALID_TAG,
    LINGER_PARAM_NAME,
    MDC_CONTROL_MODE_PARAM_NAME,
    MTU_LENGTH_PARAM_NAME,
    RELIABLE_STREAM_PARAM_NAME,
    SESSION_ID_PARAM_NAME,
    SPARSE_PARAM_NAME,
    TAG_PREFIX,
    TAGS_PARAM_NAME,
    TERM_ID_PARAM_NAME,
    TERM_LENGTH_PARAM_NAME,
    TERM_OFFSET_PARAM_NAME,
    TETHER_PARAM_NAME,
    UNTETHERED_LINGER_TIMEOUT_PARAM_NAME,
    UNTETHERED_RESTING_TIMEOUT_PARAM_NAME,
    UNTETHERED_WINDOW_LIMIT_TIMEOUT_PARAM_NAME,
    ChannelUri,
    InvalidChannelError,
    is_tagged,
)
from driver.protocol.control_protocol import ErrorCode
from driver.protocol.untethered import DEFAULT_TIMEOUTS, UntetheredTimeouts
from driver.util.bit_util import is_power_of_two, to_int32
from driver.util.java_numbers import (
    NumberFormatError,
    parse_java_int,
    parse_java_long,
    parse_long_ascii,
)
from driver.util.java_numbers import parse_duration_ns as parse_java_duration_ns
from driver.util.java_numbers import parse_size as parse_java_size

FRAME_ALIGNMENT = 32
HEADER_LENGTH = 32
MAX_UDP_PAYLOAD_LENGTH = 65504
TERM_MIN_LENGTH = 64 * 1024
TERM_MAX_LENGTH = 1024 * 1024 * 1024
MAX_MESSAGE_LENGTH = 16 * 1024 * 1024


class ParameterError(ValueError):
    """A parameter value that breaks a rule; ``from_uri`` turns it into an InvalidChannelError."""


def _fail(reason: str) -> ParameterError:
    return ParameterError(reason)


# --- number parsing (driver/util/java_numbers.py has the Java parsers) ------------------------------------


def _parsed(parse: Callable[[str, str], int], name: str, value: str) -> int:
    try:
        return parse(name, value)
    except NumberFormatError as ex:
        raise _fail(str(ex)) from None


def parse_int32(name: str, value: str) -> int:
    """``Integer.parseInt``: optional sign and decimal digits, within 32 bits."""
    return _parsed(parse_java_int, name, value)


def parse_size(name: str, value: str) -> int:
    """``(int) SystemUtil.parseSize``: the size as PublicationParams uses it, cut to a 32-bit int like
    Java's cast (``4294968320`` is 1024, ``2g`` is negative and fails the range checks that follow)."""
    return to_int32(_parsed(parse_java_size, name, value))


def parse_duration_ns(name: str, value: str) -> int:
    """``SystemUtil.parseDuration``: ns, or with an s/ms/us/ns suffix (saturating at the int64 limits)."""
    return _parsed(parse_java_duration_ns, name, value)


def parse_tag(name: str, value: str, text: str) -> int:
    """The n of ``tag:n`` (``ChannelUri.getTag``: ``parseLongAscii``, so no ``+``, and an empty n is an
    error as Java's index error is)."""
    if text == "":
        raise _fail(f"{name}={value}: no number after 'tag:'")
    return _parsed(lambda n, v: parse_long_ascii(n, v, text), name, value)


# --- shared rules ----------------------------------------------------------------------------------------


def max_message_length(term_length: int) -> int:
    """``FrameDescriptor.computeMaxMessageLength``: min(term length / 8, 16 MiB)."""
    return min(term_length // 8, MAX_MESSAGE_LENGTH)


def _shown(name: str, value: int, given: str | None) -> str:
    """``name=given (value)`` when the URI spelled the value differently (``64k``), else ``name=value``."""
    if given is None or given == str(value):
        return f"{name}={value}"
    return f"{name}={given} ({value})"


def check_term_length(term_length: int, name: str = TERM_LENGTH_PARAM_NAME, given: str | None = None) -> None:
    """``LogBufferDescriptor.checkTermLength``: a power of two in [64 KiB, 1 GiB]."""
    shown = _shown(name, term_length, given)
    if term_length < TERM_MIN_LENGTH:
        raise _fail(f"{shown} is less than the minimum term length {TERM_MIN_LENGTH} (64k)")
    if term_length > TERM_MAX_LENGTH:
        raise _fail(f"{shown} is more than the maximum term length {TERM_MAX_LENGTH} (1g)")
    if not is_power_of_two(term_length):
        raise _fail(f"{shown} is not a power of two")


def check_mtu_length(mtu_length: int, name: str = MTU_LENGTH_PARAM_NAME, given: str | None = None) -> None:
    """``Configuration.validateMtuLength``: 32 <= mtu <= 65504 and a multiple of 32."""
    shown = _shown(name, mtu_length, given)
    if not HEADER_LENGTH <= mtu_length <= MAX_UDP_PAYLOAD_LENGTH:
        raise _fail(
            f"{shown} must be >= {HEADER_LENGTH} (header length) and "
            f"<= {MAX_UDP_PAYLOAD_LENGTH} (max UDP payload)"
        )
    if mtu_length % FRAME_ALIGNMENT:
        raise _fail(f"{shown} must be a multiple of {FRAME_ALIGNMENT} (frame alignment)")


def _join_position(uri: ChannelUri, term_length: int | None) -> tuple[int, int, int] | None:
    """init-term-id / term-id / term-offset: all three or none (PublicationParams / SubscriptionParams)."""
    names = (INITIAL_TERM_ID_PARAM_NAME, TERM_ID_PARAM_NAME, TERM_OFFSET_PARAM_NAME)
    given = [name for name in names if name in uri.params]
    if not given:
        return None
    if len(given) < 3:
        missing = [name for name in names if name not in uri.params]
        raise _fail(
            f"{', '.join(names)} must be used as a complete set: "
            f"{', '.join(f'{n}={uri.params[n]}' for n in given)} given without {', '.join(missing)}"
        )
    init_term_id = parse_int32(INITIAL_TERM_ID_PARAM_NAME, uri.params[INITIAL_TERM_ID_PARAM_NAME])
    term_id = parse_int32(TERM_ID_PARAM_NAME, uri.params[TERM_ID_PARAM_NAME])
    term_offset = parse_int32(TERM_OFFSET_PARAM_NAME, uri.params[TERM_OFFSET_PARAM_NAME])
    if term_length is not None and term_offset > term_length:
        raise _fail(f"{TERM_OFFSET_PARAM_NAME}={term_offset} is greater than the term length {term_length}")
    if not 0 <= term_offset <= TERM_MAX_LENGTH:
        raise _fail(f"{TERM_OFFSET_PARAM_NAME}={term_offset} is out of range (0..{TERM_MAX_LENGTH})")
    if term_offset % FRAME_ALIGNMENT:
        raise _fail(
            f"{TERM_OFFSET_PARAM_NAME}={term_offset} must be a multiple of {FRAME_ALIGNMENT} "
            "(frame alignment)"
        )
    if to_int32(term_id - init_term_id) < 0:
        raise _fail(
            f"{TERM_ID_PARAM_NAME}={term_id} is behind {INITIAL_TERM_ID_PARAM_NAME}={init_term_id}: "
            "term-id - init-term-id (32-bit wrap-around) must not be negative"
        )
    return init_term_id, term_id, term_offset


def _as_uri(uri: ChannelUri | str) -> ChannelUri:
    return uri if isinstance(uri, ChannelUri) else ChannelUri.parse(uri)


def _text(uri: ChannelUri) -> str:
    return uri.original or str(uri)


# --- publications ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExistingPublication:
    """What the rules need to know about a publication already in the driver."""

    session_id: int
    mtu_length: int
    term_length: int


@dataclass(frozen=True, slots=True)
class PublicationParams:
    """The parameters of an ADD_PUBLICATION / ADD_EXCLUSIVE_PUBLICATION channel with defaults applied."""

    channel: str
    term_length: int
    mtu_length: int
    linger_ns: int
    is_sparse: bool
    session_id: int | None
    """Explicit (or tag-referenced) session id; None = the driver picks one."""
    is_session_id_tagged: bool
    session_id_tag: int | None
    """n of ``session-id=tag:n``: the entity tag of the network publication whose session id is reused."""
    entity_tag: int | None
    """Second value of ``tags``: the tag other publications can reference with ``session-id=tag:n``."""
    init_term_id: int | None
    term_id: int | None
    term_offset: int | None
    has_explicit_mtu: bool
    has_explicit_term_length: bool

    @property
    def has_session_id(self) -> bool:
        return self.session_id is not None

    @property
    def is_replay(self) -> bool:
        """An exclusive publication positioned by init-term-id/term-id/term-offset."""
        return self.init_term_id is not None

    @classmethod
    def from_uri(
        cls,
        uri: ChannelUri | str,
        *,
        is_exclusive: bool,
        default_term_length: int,
        default_mtu: int,
        default_linger_ns: int,
        default_sparse: bool,
        find_network_publication_by_tag: Callable[[int], ExistingPublication | None] | None = None,
        is_entity_tag_in_use: Callable[[int], bool] | None = None,
    ) -> PublicationParams:
        """Validate in 1.15.1's order: entity tag, session id, term length, mtu, linger, sparse, position,
        then mtu against the term's max message length.

        ``find_network_publication_by_tag(n)`` resolves ``session-id=tag:n`` (None or absent: nothing has
        that tag); ``is_entity_tag_in_use(n)`` says whether a network or IPC publication already has entity
        tag n. The defaults are the driver's for the kind of publication (udp or ipc).
        """
        channel = _as_uri(uri)
        try:
            return cls._from_uri(
                channel,
                is_exclusive,
                default_term_length,
                default_mtu,
                default_linger_ns,
                default_sparse,
                find_network_publication_by_tag,
                is_entity_tag_in_use,
            )
        except ParameterError as ex:
            raise InvalidChannelError(_text(channel), str(ex), error_code=ErrorCode.GENERIC_ERROR) from None

    @classmethod
    def _from_uri(
        cls,
        uri: ChannelUri,
        is_exclusive: bool,
        term_length: int,
        mtu_length: int,
        linger_ns: int,
        is_sparse: bool,
        find_network_publication_by_tag: Callable[[int], ExistingPublication | None] | None,
        is_entity_tag_in_use: Callable[[int], bool] | None,
    ) -> PublicationParams:
        params = uri.params

        entity_tag = None
        entity_tag_text = uri.entity_tag
        if entity_tag_text is not None:
            try:
                entity_tag = parse_java_long(TAGS_PARAM_NAME, entity_tag_text)
            except NumberFormatError:
                raise _fail(
                    f"{TAGS_PARAM_NAME}={params[TAGS_PARAM_NAME]}: entity tag {entity_tag_text!r} "
                    "(the 2nd tag) is not a 64-bit integer"
                ) from None
            if entity_tag == INVALID_TAG:
                raise _fail(
                    f"{TAGS_PARAM_NAME}={params[TAGS_PARAM_NAME]}: entity tag {INVALID_TAG} is reserved"
                )
            if is_entity_tag_in_use is not None and is_entity_tag_in_use(entity_tag):
                raise _fail(
                    f"{TAGS_PARAM_NAME}={params[TAGS_PARAM_NAME]}: entity tag {entity_tag} is already "
                    "used by another publication"
                )

        session_id = None
        session_id_tag = None
        is_session_id_tagged = False
        session_text = params.get(SESSION_ID_PARAM_NAME)
        if session_text is not None:
            if is_tagged(session_text):
                is_session_id_tagged = True
                tag_text = session_text[len(TAG_PREFIX) :]
                session_id_tag = parse_tag(SESSION_ID_PARAM_NAME, session_text, tag_text)
                tagged = None
                if find_network_publication_by_tag is not None and session_id_tag != INVALID_TAG:
                    tagged = find_network_publication_by_tag(session_id_tag)
                if tagged is None:
                    raise _fail(
                        f"{SESSION_ID_PARAM_NAME}={session_text} must reference a network publication "
                        f"with entity tag {session_id_tag} (set by its tags=<channel tag>,"
                        f"{session_id_tag}), and there is none"
                    )
                session_id, mtu_length, term_length = tagged.session_id, tagged.mtu_length, tagged.term_length
            else:
                session_id = parse_int32(SESSION_ID_PARAM_NAME, session_text)

        term_length_text = params.get(TERM_LENGTH_PARAM_NAME)
        if term_length_text is not None:
            explicit = parse_size(TERM_LENGTH_PARAM_NAME, term_length_text)
            check_term_length(explicit, given=term_length_text)
            if is_session_id_tagged and explicit != term_length:
                raise _fail(
                    f"{TERM_LENGTH_PARAM_NAME}={term_length_text} does not match the term length "
                    f"{term_length} of the publication referenced by {SESSION_ID_PARAM_NAME}={session_text}"
                )
            term_length = explicit

        mtu_text = params.get(MTU_LENGTH_PARAM_NAME)
        if mtu_text is not None:
            explicit = parse_size(MTU_LENGTH_PARAM_NAME, mtu_text)
            check_mtu_length(explicit, given=mtu_text)
            if is_session_id_tagged and explicit != mtu_length:
                raise _fail(
                    f"{MTU_LENGTH_PARAM_NAME}={mtu_text} does not match the mtu {mtu_length} "
                    f"of the publication referenced by {SESSION_ID_PARAM_NAME}={session_text}"
                )
            mtu_length = explicit

        linger_text = params.get(LINGER_PARAM_NAME)
        if linger_text is not None:
            linger_ns = parse_duration_ns(LINGER_PARAM_NAME, linger_text)

        sparse_text = params.get(SPARSE_PARAM_NAME)
        if sparse_text is not None:
            is_sparse = sparse_text == "true"

        position = _join_position(uri, term_length) if is_exclusive else None

        limit = max_message_length(term_length)
        if mtu_length > limit:
            raise _fail(
                f"{MTU_LENGTH_PARAM_NAME}={mtu_length} is greater than the max message length {limit} "
                f"for term length {term_length} (min(term length / 8, 16 MiB))"
            )

        init_term_id, term_id, term_offset = position if position is not None else (None, None, None)
        return cls(
            channel=_text(uri),
            term_length=term_length,
            mtu_length=mtu_length,
            linger_ns=linger_ns,
            is_sparse=is_sparse,
            session_id=session_id,
            is_session_id_tagged=is_session_id_tagged,
            session_id_tag=session_id_tag,
            entity_tag=entity_tag,
            init_term_id=init_term_id,
            term_id=term_id,
            term_offset=term_offset,
            has_explicit_mtu=mtu_text is not None,
            has_explicit_term_length=term_length_text is not None,
        )


def validate_shared_publication(existing: ExistingPublication, requested: PublicationParams) -> None:
    """``PublicationParams.confirmMatch``: re-adding a shared publication must not contradict it.

    Only parameters given explicitly in the request's URI are compared (mtu, term-length, session-id).
    """
    if requested.has_explicit_mtu and requested.mtu_length != existing.mtu_length:
        reason = (
            f"{MTU_LENGTH_PARAM_NAME}={requested.mtu_length} differs from the existing shared "
            f"publication's mtu {existing.mtu_length}"
        )
    elif requested.has_explicit_term_length and requested.term_length != existing.term_length:
        reason = (
            f"{TERM_LENGTH_PARAM_NAME}={requested.term_length} differs from the existing shared "
            f"publication's term length {existing.term_length}"
        )
    elif requested.session_id is not None and requested.session_id != existing.session_id:
        reason = (
            f"{SESSION_ID_PARAM_NAME}={requested.session_id} differs from the existing shared "
            f"publication's session id {existing.session_id}"
        )
    else:
        return
    raise InvalidChannelError(
        requested.channel,
        f"{reason}: omit it or use the same value, or add an exclusive publication",
        error_code=ErrorCode.GENERIC_ERROR,
    )


# --- subscriptions ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SubscriptionParams:
    """The parameters of an ADD_SUBSCRIPTION channel (udp, ipc or spy)."""

    channel: str
    session_id: int | None
    """Only this session's image; None = all sessions."""
    is_reliable: bool
    is_sparse: bool
    tags: tuple[str, ...]
    init_term_id: int | None
    term_id: int | None
    term_offset: int | None
    """The join position 1.15.1 parses and validates for subscriptions but does not use."""
    is_tether: bool = True
    """``tether``: False lets the stream run on without this subscriber when it falls behind."""
    untethered_timeouts: UntetheredTimeouts = DEFAULT_TIMEOUTS
    is_response: bool = False
    """``control-mode=response``: no session until the server's driver names its response publication's."""

    @property
    def has_session_id(self) -> bool:
        return self.session_id is not None

    @property
    def has_join_position(self) -> bool:
        return self.init_term_id is not None

    @classmethod
    def from_uri(
        cls,
        uri: ChannelUri | str,
        default_reliable: bool = True,
        default_sparse: bool = False,
        default_tether: bool = True,
        default_untethered: UntetheredTimeouts = DEFAULT_TIMEOUTS,
    ) -> SubscriptionParams:
        """``reliable``: only ``false`` makes it unreliable; ``sparse``: only ``true`` makes it sparse;
        ``tether``: only ``true`` tethers (as Aeron reads it). The untethered timeouts are durations."""
        channel = _as_uri(uri)
        params = channel.params
        try:
            session_id = None
            session_text = params.get(SESSION_ID_PARAM_NAME)
            if session_text is not None:
                if is_tagged(session_text):
                    raise _fail(
                        f"{SESSION_ID_PARAM_NAME}={session_text}: a subscription takes a plain 32-bit "
                        "session id ('tag:' is only for publications)"
                    )
                session_id = parse_int32(SESSION_ID_PARAM_NAME, session_text)
            reliable_text = params.get(RELIABLE_STREAM_PARAM_NAME)
            is_reliable = default_reliable if reliable_text is None else reliable_text != "false"
            position = _join_position(channel, None)
            sparse_text = params.get(SPARSE_PARAM_NAME)
            is_sparse = default_sparse if sparse_text is None else sparse_text == "true"
            tether_text = params.get(TETHER_PARAM_NAME)
            is_tether = default_tether if tether_text is None else tether_text == "true"
            window_limit_ns = _duration_or(params, UNTETHERED_WINDOW_LIMIT_TIMEOUT_PARAM_NAME, None)
            linger_ns = _duration_or(params, UNTETHERED_LINGER_TIMEOUT_PARAM_NAME, None)
            untethered = UntetheredTimeouts(
                window_limit_ns=default_untethered.window_limit_ns if window_limit_ns is None else window_limit_ns,
                # without a linger of its own a channel's window-limit timeout sets the linger too, as in Aeron
                linger_ns=linger_ns
                if linger_ns is not None
                else (window_limit_ns if window_limit_ns is not None else default_untethered.linger_ns),
                resting_ns=_duration_or(params, UNTETHERED_RESTING_TIMEOUT_PARAM_NAME, default_untethered.resting_ns),
            )
        except ParameterError as ex:
            raise InvalidChannelError(_text(channel), str(ex), error_code=ErrorCode.GENERIC_ERROR) from None
        init_term_id, term_id, term_offset = position if position is not None else (None, None, None)
        return cls(
            channel=_text(channel),
            session_id=session_id,
            is_reliable=is_reliable,
            is_sparse=is_sparse,
            tags=channel.tags,
            init_term_id=init_term_id,
            term_id=term_id,
            term_offset=term_offset,
            is_tether=is_tether,
            untethered_timeouts=untethered,
            is_response=params.get(MDC_CONTROL_MODE_PARAM_NAME) == CONTROL_MODE_RESPONSE,
        )


def _duration_or(params: dict[str, str], name: str, default: int | None) -> int | None:
    text = params.get(name)
    if text is None:
        return default
    value = parse_duration_ns(name, text)
    if value < 0:
        raise _fail(f"{name}={text} is negative")
    return value
