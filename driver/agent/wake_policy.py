"""The runner's wake-up decisions as one table, sans-IO (driver/agent/runner.py carries them out).

Four events reach a runner: a Python duty cycle ended (:func:`after_cycle`, then :func:`after_answer` when the
work probe was asked whether an answer comes at once), a native cycle ended (:func:`after_native`), its park
timer fired (:func:`on_park_timer`, then :func:`after_quiet` when the probe was asked whether a cycle would find
anything) and an I/O callback woke it (:func:`on_wake`). Each returns an ``Action``: what runs next
(``then``: the Python duty cycle or the native one), how (``step``: now, at the loop's next turn, after an OS
yield, after a park on the runner's timerfd or on the loop's timer for ``delay_ns``, after asking the probe, or
not at all) and whether the native cycle is armed first (``arm``). Every latency setting lands here, through
the idle strategy's delay.

  event                               condition                                        action
  cycle ended (delay, work)           delay > 0, work > 0, the probe spins             ask the probe: answer soon?
                                      else                                             wait(delay), arm if parking
  probe answered (moves)              moves                                            cycle at the next turn
                                      else                                             wait(delay), arm if parking
  native cycle ended (work, delay)    handed back (None)                               cycle now
                                      SPIN, or parks after work with more pending      native at the next turn
                                      else                                             wait(delay), then native
  park timer fired                    stale (not parked, or already woken)             nothing
                                      native armed                                     native now
                                      a probe                                          ask the probe: quiet?
                                      else                                             cycle now
  probe answered (quiet, delay)       quiet and the idle strategy parks                wait(delay) (no cycle)
                                      else                                             cycle now
  woken by I/O                        parked                                           cycle (native when there is
                                                                                       one) at the next turn
                                      else                                             nothing
  wait(delay)                         YIELD / OS_YIELD                                 next turn / OS yield first
                                      < PRECISE_PARK_BELOW_NS and a timerfd            park on the timerfd
                                      else                                             park on the loop's timer
"""

from __future__ import annotations

from driver.agent.idle_strategy import OS_YIELD, SPIN, YIELD

PRECISE_PARK_BELOW_NS = 1_000_000
"""Parks shorter than this use the runner's timerfd (when the loop can watch one); longer ones call_later."""

CYCLE = "cycle"
NATIVE = "native"

NOW = "now"  # run it in this callback
SOON = "soon"  # at the loop's next turn (call_soon)
OS_YIELD_THEN = "os_yield"  # sched_yield, then at the loop's next turn
PARK_TIMER = "park_timer"  # the runner's timerfd, delay_ns
PARK_LATER = "park_later"  # the loop's timer (call_later), delay_ns
ASK_ANSWER = "ask_answer"  # the probe's moves_soon(), then after_answer
ASK_QUIET = "ask_quiet"  # the probe's is_quiet(), then after_quiet
NOTHING = "nothing"


Action = tuple[str, str, int, bool]
"""(step, then, delay_ns, arm): a plain tuple, as the runner takes one on every wake-up. ``arm``: arm the native
cycle (its after_cycle) before the wait, after a Python cycle that parks."""


def action(step: str, then: str = CYCLE, delay_ns: int = 0, arm: bool = False) -> Action:
    return (step, then, delay_ns, arm)


def parks(action: Action) -> bool:
    return action[0] == PARK_TIMER or action[0] == PARK_LATER


CYCLE_NOW = action(NOW, CYCLE)
CYCLE_SOON = action(SOON, CYCLE)
NATIVE_NOW = action(NOW, NATIVE)
NATIVE_SOON = action(SOON, NATIVE)
DO_NOTHING = action(NOTHING)
ASK_IF_ANSWER_SOON = action(ASK_ANSWER)
ASK_IF_QUIET = action(ASK_QUIET)


def wait(delay_ns: int, then: str, precise: bool, arm: bool = False) -> Action:
    """A yield or a park of ``delay_ns`` (an idle strategy's delay, not SPIN), then ``then``; ``precise``: the
    runner has a timerfd."""
    if delay_ns == YIELD:
        return (SOON, then, 0, arm)
    if delay_ns == OS_YIELD:
        return (OS_YIELD_THEN, then, 0, arm)
    if delay_ns < PRECISE_PARK_BELOW_NS and precise:
        return (PARK_TIMER, then, delay_ns, arm)
    return (PARK_LATER, then, delay_ns, arm)


def after_cycle(work: int, delay_ns: int, probe_spins: bool, has_native: bool, precise: bool) -> Action:
    """A Python duty cycle did ``work`` and the idle strategy says ``delay_ns`` (not SPIN: a spin runs the
    cycle again inside it). ``probe_spins``: a probe that may spin for an answer."""
    if delay_ns > 0 and work > 0 and probe_spins:
        return ASK_IF_ANSWER_SOON
    return wait(delay_ns, CYCLE, precise, has_native and delay_ns > 0)


def after_answer(moves: bool, delay_ns: int, has_native: bool, precise: bool) -> Action:
    """The probe said whether what the cycle's work leaves comes back at once."""
    if moves:
        return CYCLE_SOON  # an answer is already there: no park
    return wait(delay_ns, CYCLE, precise, has_native and delay_ns > 0)


def after_native(work: int | None, delay_ns: int, pending: bool, precise: bool) -> Action:
    """A native cycle did ``work`` (None: handed back); ``delay_ns`` the idle strategy's; ``pending``: the
    native cycle's look for more (asked only when it parks after work)."""
    if work is None:
        return CYCLE_NOW
    if delay_ns == SPIN or (delay_ns > 0 and work > 0 and pending):
        return NATIVE_SOON
    return wait(delay_ns, NATIVE, precise)


def native_pending_matters(work: int | None, delay_ns: int) -> bool:
    """Whether :func:`after_native` looks at ``pending`` (the runner asks the native cycle only then)."""
    return work is not None and work > 0 and delay_ns > 0


def on_park_timer(fresh: bool, native_armed: bool, has_probe: bool) -> Action:
    """The park timer fired; ``fresh``: it was this park's (the runner is parked and no wake ran since)."""
    if not fresh:
        return DO_NOTHING  # a stale readiness consumes nothing: no cycle
    if native_armed:
        return NATIVE_NOW
    if has_probe:
        return ASK_IF_QUIET
    return CYCLE_NOW


def after_quiet(quiet: bool, delay_ns: int | None, precise: bool) -> Action:
    """The probe said whether a cycle now would find nothing; ``delay_ns``: the idle strategy's next delay for no
    work (None when not quiet: not asked)."""
    if quiet and delay_ns is not None and delay_ns > 0:
        return wait(delay_ns, CYCLE, precise)  # nothing to do: park again, no cycle
    return CYCLE_NOW


def on_wake(parked: bool, has_native: bool) -> Action:
    """An I/O callback woke the runner."""
    if not parked:
        return DO_NOTHING
    return NATIVE_SOON if has_native else CYCLE_SOON
