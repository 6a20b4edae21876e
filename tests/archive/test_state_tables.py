"""The session state machines, one table each (docs/archive.md sections 5, 6 and 8)."""

from __future__ import annotations

import enum

import pytest

from driver.archive import control_session, recording_session, replay_session
from driver.archive.archive_context import ArchiveConfigurationError, ArchiveContext
from driver.archive.state import StateMachine

TABLES = [
    (control_session, ["INIT", "ACTIVE", "INACTIVE", "DONE"], ["connected", "abort", "closed"]),
    (recording_session, ["INIT", "RECORDING", "INACTIVE", "STOPPED"], ["opened", "end_of_stream", "closed"]),
    (replay_session, ["INIT", "REPLAY", "INACTIVE", "DONE"], ["connected", "complete", "closed"]),
]


@pytest.mark.parametrize(("module", "states", "happy_path"), TABLES, ids=lambda v: getattr(v, "__name__", ""))
def test_happy_path_visits_every_state_in_order(module, states, happy_path) -> None:
    machine = StateMachine(module.TRANSITIONS, module.State.INIT)
    visited = [machine.state.name]
    for event in happy_path:
        assert machine.on(event), event
        visited.append(machine.state.name)
    assert visited == states


@pytest.mark.parametrize(("module", "states", "happy_path"), TABLES, ids=lambda v: getattr(v, "__name__", ""))
def test_every_state_but_the_last_can_end_and_the_last_is_final(module, states, happy_path) -> None:
    state_type: type[enum.Enum] = module.State
    final = state_type[states[-1]]
    assert not any(source is final for source, _ in module.TRANSITIONS)
    for state in state_type:
        if state is not final:
            machine = StateMachine(module.TRANSITIONS, state)
            for _ in range(3):
                machine.on("abort") or machine.on("closed")
            assert machine.state is final, state


def test_an_event_the_table_does_not_know_changes_nothing() -> None:
    machine = StateMachine(replay_session.TRANSITIONS, replay_session.State.INIT)
    assert not machine.on("complete")
    assert machine.state is replay_session.State.INIT


def test_context_defaults_and_validation() -> None:
    ctx = ArchiveContext.from_sources(environ={})
    assert (ctx.control_stream_id, ctx.local_control_stream_id, ctx.recording_events_stream_id) == (
        10,
        11,
        30,
    )
    assert ctx.segment_file_length == 128 * 1024 * 1024 and ctx.threading_mode == "DEDICATED"
    assert (
        ArchiveContext.from_sources({}, {"aeron.archive.connect.timeout": "2s"}, {}).connect_timeout_ns
        == 2_000_000_000
    )
    assert (
        ArchiveContext.from_sources({}, {}, {"AERON_ARCHIVE_THREADING_MODE": "shared"}).threading_mode
        == "SHARED"
    )
    with pytest.raises(ArchiveConfigurationError, match="not a power of 2"):
        ArchiveContext.from_sources({}, {"aeron.archive.segment.file.length": "100000"}, {})
    with pytest.raises(ArchiveConfigurationError, match=r"aeron\.archive\.threading\.mode"):
        ArchiveContext.from_sources({}, {"aeron.archive.threading.mode": "threads"}, {})
