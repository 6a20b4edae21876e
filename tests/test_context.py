"""DriverContext: Aeron 1.15.1 defaults, value parsing, precedence of sources, validation."""

from __future__ import annotations

import getpass
import os

import pytest

from driver import context
from driver.context import (
    ConfigurationError,
    DriverContext,
    default_aeron_dir,
    parse_bool,
    parse_duration_ns,
    parse_ms,
    parse_property_args,
    parse_size,
    parse_threading_mode,
)

MIB = 1024 * 1024
NO_ENV: dict[str, str] = {}


def make(**kwargs) -> DriverContext:
    """from_sources that never reads os.environ."""
    kwargs.setdefault("environ", NO_ENV)
    return DriverContext.from_sources(**kwargs)


# --- defaults --------------------------------------------------------------------------------------------


def test_defaults_are_aeron_1_15_1s() -> None:
    ctx = make()
    assert ctx.conductor_buffer_length == MIB + 768 == 1_049_344
    assert ctx.to_clients_buffer_length == MIB + 128 == 1_048_704
    assert ctx.counters_values_buffer_length == MIB
    assert ctx.counters_metadata_buffer_length == 4 * MIB
    assert ctx.error_buffer_length == MIB
    assert ctx.loss_report_buffer_length == MIB
    assert ctx.file_page_size == 4096
    assert ctx.client_liveness_timeout_ns == 5_000_000_000
    assert ctx.driver_timeout_ms == 10_000
    assert ctx.timer_interval_ns == 1_000_000_000
    assert ctx.publication_linger_timeout_ns == 5_000_000_000
    assert ctx.counter_free_to_reuse_timeout_ns == 1_000_000_000
    assert ctx.threading_mode == "SHARED"  # ours: all agents share one loop (see context.py)
    assert ctx.dir_delete_on_start is False
    assert ctx.dir_delete_on_shutdown is False
    assert ctx.unknown_properties == []
    assert ctx.aeron_dir == default_aeron_dir()


def test_plain_constructor_has_the_same_defaults_and_validates() -> None:
    ctx = DriverContext()
    assert ctx == make()
    ctx.validate()


def test_every_setting_has_a_distinct_aeron_property() -> None:
    props = [f.metadata["prop"] for f in DriverContext.settings()]
    assert len(props) == len(set(props))
    assert all(p.startswith("aeron.") for p in props)
    assert "unknown_properties" not in {f.name for f in DriverContext.settings()}


def test_default_aeron_dir_ends_with_aeron_user() -> None:
    path = default_aeron_dir()
    assert os.path.basename(path) == f"aeron-{getpass.getuser()}"
    if os.path.isdir("/dev/shm"):
        assert os.path.dirname(path) == "/dev/shm"


def test_default_aeron_dir_without_dev_shm_uses_the_temp_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(context.os.path, "isdir", lambda _p: False)
    monkeypatch.setattr(context.tempfile, "gettempdir", lambda: "/some/tmp")
    assert default_aeron_dir() == f"/some/tmp/aeron-{getpass.getuser()}"


def test_default_aeron_dir_when_the_user_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_user() -> str:
        raise KeyError("uid not in passwd")

    monkeypatch.setattr(context.getpass, "getuser", no_user)
    assert os.path.basename(default_aeron_dir()) == "aeron-default"


def test_counters_metadata_is_four_times_values() -> None:
    assert (
        make(properties={"aeron.counters.buffer.length": "64k"}).counters_metadata_buffer_length == 256 * 1024
    )


# --- parsing ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("65536", 65536),
        ("64k", 64 * 1024),
        ("64K", 64 * 1024),
        ("16m", 16 * MIB),
        ("16M", 16 * MIB),
        ("1g", 1024 * MIB),
        ("1G", 1024 * MIB),
        (" 8k ", 8 * 1024),
        ("k", 0),  # as agrona's parseSize: no digits before the suffix is 0
        ("+65536", 65536),  # Long.parseLong takes a sign
        ("2147483647", 2**31 - 1),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size("aeron.x", text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "64kb", "1.5m", "-1", "1t", "64 k b", "0x10", "+64k", "2g", "2147483648", "9007199254739969k"],
)
def test_parse_size_rejects_with_the_property_name(text: str) -> None:
    with pytest.raises(ConfigurationError, match=r"aeron\.some\.length=") as info:
        parse_size("aeron.some.length", text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize(
    ("text", "expected_ns"),
    [
        ("5s", 5_000_000_000),
        ("5S", 5_000_000_000),
        ("500ms", 500_000_000),
        ("10us", 10_000),
        ("7ns", 7),
        ("123", 123),
        ("0", 0),
        (" 2s ", 2_000_000_000),
    ],
)
def test_parse_duration_ns(text: str, expected_ns: int) -> None:
    assert parse_duration_ns("aeron.x", text) == expected_ns


@pytest.mark.parametrize("text", ["", "s", "1.5s", "-5s", "5min", "5 h", "ten"])
def test_parse_duration_rejects_with_the_property_name(text: str) -> None:
    with pytest.raises(ConfigurationError, match=r"aeron\.some\.timeout="):
        parse_duration_ns("aeron.some.timeout", text)


@pytest.mark.parametrize(
    ("text", "expected_ms"),
    [("10000", 10_000), ("10s", 10_000), ("1500ms", 1_500), ("2000000us", 2_000), ("5000000ns", 5)],
)
def test_parse_ms_plain_numbers_are_milliseconds(text: str, expected_ms: int) -> None:
    assert parse_ms("aeron.driver.timeout", text) == expected_ms


def test_parse_ms_rejects_with_the_property_name() -> None:
    with pytest.raises(ConfigurationError, match=r"aeron\.driver\.timeout="):
        parse_ms("aeron.driver.timeout", "10 seconds")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("true", True), ("TRUE", True), ("1", True), ("yes", True), ("false", False), ("0", False), ("", False)],
)
def test_parse_bool(text: str, expected: bool) -> None:
    assert parse_bool("aeron.x", text) is expected


def test_parse_bool_rejects_with_the_property_name() -> None:
    with pytest.raises(ConfigurationError, match=r"aeron\.dir\.delete\.on\.start='maybe'"):
        parse_bool("aeron.dir.delete.on.start", "maybe")


@pytest.mark.parametrize("text", ["dedicated", "SHARED", "shared_network", "Invoker"])
def test_parse_threading_mode(text: str) -> None:
    assert parse_threading_mode("aeron.threading.mode", text) == text.upper()


def test_parse_threading_mode_rejects_with_the_property_name() -> None:
    with pytest.raises(ConfigurationError, match=r"aeron\.threading\.mode='threads'"):
        parse_threading_mode("aeron.threading.mode", "threads")


def test_flow_control_strategies_take_1_15_1_class_names_or_short_names() -> None:
    ctx = make(
        properties={"aeron.multicast.flow.control.strategy": "io.aeron.driver.MinMulticastFlowControl"}
    )
    assert (ctx.unicast_flow_control, ctx.multicast_flow_control) == ("unicast", "min")
    assert make().multicast_flow_control == "max"  # 1.15.1's default for multicast and MDC
    assert make(properties={"aeron.unicast.flow.control.strategy": "max"}).unicast_flow_control == "max"
    with pytest.raises(ConfigurationError, match=r"aeron\.multicast\.flow\.control\.strategy='Preferred'"):
        make(properties={"aeron.multicast.flow.control.strategy": "Preferred"})


# --- sources and precedence ------------------------------------------------------------------------------


def test_properties_are_parsed_with_units() -> None:
    ctx = make(
        properties={
            "aeron.dir": "/tmp/aeron-props",
            "aeron.conductor.buffer.length": str(2 * MIB + 768),
            "aeron.counters.buffer.length": "64k",
            "aeron.client.liveness.timeout": "500ms",
            "aeron.driver.timeout": "20s",
            "aeron.timer.interval": "10us",
            "aeron.dir.delete.on.start": "true",
            "aeron.threading.mode": "shared",
        }
    )
    assert ctx.aeron_dir == "/tmp/aeron-props"
    assert ctx.conductor_buffer_length == 2 * MIB + 768
    assert ctx.counters_values_buffer_length == 64 * 1024
    assert ctx.client_liveness_timeout_ns == 500_000_000
    assert ctx.driver_timeout_ms == 20_000
    assert ctx.timer_interval_ns == 10_000
    assert ctx.dir_delete_on_start is True
    assert ctx.threading_mode == "SHARED"


def test_environment_variables_are_aeron_upper_snake_case() -> None:
    ctx = make(
        environ={
            "AERON_DIR": "/tmp/aeron-env",
            "AERON_CLIENTS_BUFFER_LENGTH": str(2 * MIB + 128),
            "AERON_CLIENT_LIVENESS_TIMEOUT": "7s",
            "AERON_DRIVER_TIMEOUT": "3000",
            "AERON_THREADING_MODE": "invoker",
            "HOME": "/ignored",
        }
    )
    assert ctx.aeron_dir == "/tmp/aeron-env"
    assert ctx.to_clients_buffer_length == 2 * MIB + 128
    assert ctx.client_liveness_timeout_ns == 7_000_000_000
    assert ctx.driver_timeout_ms == 3_000
    assert ctx.threading_mode == "INVOKER"


def test_precedence_explicit_over_properties_over_environment_over_default() -> None:
    environ = {"AERON_TIMER_INTERVAL": "3s", "AERON_DRIVER_TIMEOUT": "3000", "AERON_DIR": "/env"}
    properties = {"aeron.timer.interval": "2s", "aeron.driver.timeout": "2000"}
    explicit = {"timer_interval_ns": 1_500_000_000}
    ctx = make(explicit=explicit, properties=properties, environ=environ)
    assert ctx.timer_interval_ns == 1_500_000_000  # explicit
    assert ctx.driver_timeout_ms == 2_000  # property beats environment
    assert ctx.aeron_dir == "/env"  # environment beats default
    assert ctx.client_liveness_timeout_ns == 5_000_000_000  # default


def test_explicit_none_falls_through_to_the_next_source() -> None:
    ctx = make(
        explicit={"aeron_dir": None, "threading_mode": None, "dir_delete_on_start": None},
        properties={"aeron.dir": "/from/props"},
        environ={"AERON_THREADING_MODE": "SHARED"},
    )
    assert ctx.aeron_dir == "/from/props"
    assert ctx.threading_mode == "SHARED"
    assert ctx.dir_delete_on_start is False


def test_explicit_strings_are_parsed_like_properties() -> None:
    """CLI flags arrive as strings: --client-liveness-timeout 500ms, --threading-mode shared."""
    ctx = make(
        explicit={"client_liveness_timeout_ns": "500ms", "threading_mode": "shared", "aeron_dir": "/x"}
    )
    assert ctx.client_liveness_timeout_ns == 500_000_000
    assert ctx.threading_mode == "SHARED"
    assert ctx.aeron_dir == "/x"


def test_explicit_bad_string_is_rejected_naming_the_property() -> None:
    with pytest.raises(ConfigurationError, match=r"aeron\.threading\.mode='bogus'"):
        make(explicit={"threading_mode": "bogus"})
    with pytest.raises(ConfigurationError, match=r"aeron\.client\.liveness\.timeout='5 minutes'"):
        make(explicit={"client_liveness_timeout_ns": "5 minutes"})


def test_from_sources_reads_os_environ_only_when_no_environ_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AERON_DRIVER_TIMEOUT", "4321")
    assert DriverContext.from_sources().driver_timeout_ms == 4321
    assert DriverContext.from_sources(environ={}).driver_timeout_ms == 10_000


@pytest.mark.parametrize(
    ("prop", "value"),
    [
        ("aeron.conductor.buffer.length", "lots"),
        ("aeron.client.liveness.timeout", "5 min"),
        ("aeron.driver.timeout", "-1"),
        ("aeron.dir.delete.on.start", "perhaps"),
        ("aeron.threading.mode", "fibers"),
        ("aeron.file.page.size", "4kb"),
    ],
)
def test_bad_property_value_names_the_property(prop: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"{prop.replace('.', '[.]')}={value!r}"):
        make(properties={prop: value})


def test_bad_environment_value_names_the_variable() -> None:
    with pytest.raises(ConfigurationError, match=r"AERON_TIMER_INTERVAL='soon'"):
        make(environ={"AERON_TIMER_INTERVAL": "soon"})


def test_bad_environment_value_is_not_read_when_a_property_overrides_it() -> None:
    ctx = make(properties={"aeron.timer.interval": "2s"}, environ={"AERON_TIMER_INTERVAL": "soon"})
    assert ctx.timer_interval_ns == 2_000_000_000


def test_unknown_aeron_properties_are_reported_not_fatal() -> None:
    ctx = make(
        properties={
            "aeron.sender.idle.strategy": "noop",  # a setting now (idle strategies)
            "aeron.dir": "/tmp/a",
            "aeron.bogus": "1",
            "java.io.tmpdir": "/tmp",
            "agrona.disable.bounds.checks": "true",
            "aeron.archive.control.channel": "aeron:ipc",  # the archive's: it reports its own unknown ones
        }
    )
    assert ctx.unknown_properties == ["aeron.bogus"]
    assert ctx.aeron_dir == "/tmp/a"


# --- validation ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prop", "value"),
    [
        ("aeron.conductor.buffer.length", str(MIB)),  # forgot the 768-byte trailer
        ("aeron.conductor.buffer.length", str(MIB + 700)),
        ("aeron.conductor.buffer.length", "768"),
        ("aeron.clients.buffer.length", str(MIB)),  # forgot the 128-byte trailer
        ("aeron.clients.buffer.length", str(3 * 65536 + 128)),
    ],
)
def test_validation_rejects_a_ring_capacity_that_is_not_a_power_of_two(prop: str, value: str) -> None:
    with pytest.raises(
        ConfigurationError, match=rf"{prop.replace('.', '[.]')}={value}: capacity .* power of two"
    ):
        make(properties={prop: value})


def test_validate_rejects_a_bad_ring_capacity_set_after_construction() -> None:
    ctx = DriverContext(conductor_buffer_length=MIB + 768)
    ctx.validate()
    ctx.conductor_buffer_length = 3 * 4096 + 768
    with pytest.raises(ConfigurationError, match=r"aeron\.conductor\.buffer\.length"):
        ctx.validate()


@pytest.mark.parametrize(
    ("prop", "value", "names"),
    [
        ("aeron.counters.buffer.length", "1000", "aeron.counters.buffer.length"),
        ("aeron.counters.buffer.length", "0", "aeron.counters.buffer.length"),
        ("aeron.error.buffer.length", "1001", "aeron.error.buffer.length"),
        ("aeron.file.page.size", "2048", "aeron.file.page.size"),
        ("aeron.file.page.size", "6000", "aeron.file.page.size"),
        ("aeron.client.liveness.timeout", "999us", "aeron.client.liveness.timeout"),
        ("aeron.idle.max.park", "2ms", "aeron.idle.max.park"),
        ("aeron.idle.max.park", "0", "aeron.idle.max.park"),
    ],
)
def test_validation_rejects_unusable_values_naming_the_property(prop: str, value: str, names: str) -> None:
    with pytest.raises(ConfigurationError, match=names.replace(".", "[.]")):
        make(properties={prop: value})


def test_small_valid_buffers_are_accepted() -> None:
    ctx = make(
        properties={
            "aeron.conductor.buffer.length": str(64 * 1024 + 768),
            "aeron.clients.buffer.length": str(64 * 1024 + 128),
            "aeron.counters.buffer.length": "128",
            "aeron.error.buffer.length": "8",
            "aeron.file.page.size": "64k",
            "aeron.client.liveness.timeout": "1ms",
            "aeron.idle.max.park": "1ns",
        }
    )
    assert ctx.file_page_size == 65536


# --- the 1.15.1 counter reuse quirk ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timeout", "expected_ms"),
    [("1s", 1), ("0", 0), ("500us", 0), ("1ms", 1), ("5ms", 1), ("60s", 1)],
)
def test_counter_free_to_reuse_timeout_ms_reproduces_the_1_15_1_min_quirk(
    timeout: str, expected_ms: int
) -> None:
    ctx = make(properties={"aeron.counters.free.to.reuse.timeout": timeout})
    assert ctx.counter_free_to_reuse_timeout_ms == expected_ms


# --- -D arguments ----------------------------------------------------------------------------------------


def test_parse_property_args_splits_attached_and_separate_forms() -> None:
    properties, rest = parse_property_args(
        ["run", "-Daeron.dir=/tmp/a", "--dir", "x", "-D", "aeron.timer.interval=2s", "--once"]
    )
    assert properties == {"aeron.dir": "/tmp/a", "aeron.timer.interval": "2s"}
    assert rest == ["run", "--dir", "x", "--once"]


def test_parse_property_args_keeps_equals_signs_in_the_value_and_allows_empty_values() -> None:
    properties, rest = parse_property_args(["-Daeron.x=a=b", "-Daeron.empty="])
    assert properties == {"aeron.x": "a=b", "aeron.empty": ""}
    assert rest == []


def test_parse_property_args_later_values_win() -> None:
    properties, _ = parse_property_args(["-Daeron.dir=/a", "-Daeron.dir=/b"])
    assert properties == {"aeron.dir": "/b"}


@pytest.mark.parametrize(
    "argv", [["-Dnovalue"], ["-D=value"], ["-D"], ["-D", "novalue"], ["run", "-Daeron.dir"]]
)
def test_parse_property_args_rejects_a_property_without_a_value(argv: list[str]) -> None:
    with pytest.raises(ConfigurationError, match=r"expected -Dname=value"):
        parse_property_args(argv)


def test_parse_property_args_then_from_sources() -> None:
    properties, _ = parse_property_args(["-Daeron.client.liveness.timeout=2s", "-Daeron.unknown.thing=1"])
    ctx = make(properties=properties)
    assert ctx.client_liveness_timeout_ns == 2_000_000_000
    assert ctx.unknown_properties == ["aeron.unknown.thing"]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("busy-spin", "busy-spin"),
        ("BUSY_SPIN", "busy-spin"),
        ("org.agrona.concurrent.BusySpinIdleStrategy", "busy-spin"),
        ("yield", "yield"),
        ("org.agrona.concurrent.YieldingIdleStrategy", "yield"),
        (" backoff ", "backoff"),
        ("org.agrona.concurrent.BackoffIdleStrategy", "backoff"),
        ("noop", "noop"),
        ("org.agrona.concurrent.NoOpIdleStrategy", "noop"),
        ("sleeping", "sleeping"),
        ("org.agrona.concurrent.SleepingMillisIdleStrategy", "sleeping"),
    ],
)
def test_idle_strategies_by_short_or_agrona_class_name(text: str, name: str) -> None:
    props = {
        f"aeron.{agent}.idle.strategy": text
        for agent in ("conductor", "sender", "receiver", "sharednetwork", "shared")
    }
    ctx = make(properties=props)
    assert (
        ctx.conductor_idle_strategy,
        ctx.sender_idle_strategy,
        ctx.receiver_idle_strategy,
        ctx.shared_network_idle_strategy,
        ctx.shared_idle_strategy,
    ) == (name,) * 5
    assert make().shared_idle_strategy == "backoff"


@pytest.mark.parametrize("text", ["spinning", "org.agrona.concurrent.ControllableIdleStrategy", ""])
def test_bad_idle_strategy_is_refused_by_name(text: str) -> None:
    with pytest.raises(ConfigurationError, match=r"aeron\.receiver\.idle\.strategy=.*busy-spin"):
        make(properties={"aeron.receiver.idle.strategy": text})
    with pytest.raises(ConfigurationError, match="AERON_SHARED_IDLE_STRATEGY"):
        make(environ={"AERON_SHARED_IDLE_STRATEGY": text})
