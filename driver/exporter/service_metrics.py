"""Prometheus metrics of the record & replay service's jobs, from its counters in cnc.dat
(driver/status/service_counters.py; docs/service.md section 9). The record or replay job is the ``operation``
label (``job`` is Prometheus' own: the scrape job). Every family is always present (empty while no
service runs on the driver), so dashboards and their tests know the names.

=========================================  ==========================================================================
``aeron_service_job_state``                 {operation, state}: 1 for the job's current state, 0 for the others
``aeron_service_job_running``               {operation}: 1 while the job runs (running or stopping)
``aeron_service_job_messages``              {operation}: messages recorded / replayed by the current or last job
``aeron_service_job_bytes``                 {operation}: their bytes
``aeron_service_job_duration_seconds``      {operation}: how long it has run (ran)
``aeron_service_job_progress_ratio``        {operation}: 0-1 of its limit (record: count or duration; replay: all rounds)
``aeron_service_replay_repeats_done``       rounds of the replay completed
``aeron_service_replay_repeat``             rounds asked for
=========================================  ==========================================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from driver.concurrent.counter_types import CounterInfo
from driver.status.service_counters import SERVICE_JOB_TYPE_ID, STATES, Field, Job, parse_label

PREFIX = "aeron_service"
_PER_JOB = (
    (Field.MESSAGES, "job_messages", "Messages recorded or replayed by the current (else the last) job.", 1),
    (Field.BYTES, "job_bytes", "Bytes recorded or replayed by the current (else the last) job.", 1),
    (Field.DURATION_MS, "job_duration_seconds", "How long the current (else the last) job has run.", 1e-3),
    (
        Field.PROGRESS_PPM,
        "job_progress_ratio",
        "How far the job is, 0 to 1: a recording of its count or duration, a replay of all its rounds.",
        1e-6,
    ),
)


def service_job_values(counters: Iterable[CounterInfo]) -> dict[tuple[Job, Field], int]:
    values = {}
    for c in counters:
        if c.type_id == SERVICE_JOB_TYPE_ID and (parsed := parse_label(c.label)) is not None:
            values[parsed] = c.value
    return values


def service_metrics(counters: Iterable[CounterInfo]) -> Iterator[Metric]:
    values = service_job_values(counters)
    states = GaugeMetricFamily(
        f"{PREFIX}_job_state",
        "The record and replay jobs' states: 1 for the current one (" + ", ".join(STATES) + ").",
        labels=("operation", "state"),
    )
    running = GaugeMetricFamily(
        f"{PREFIX}_job_running", "1 while the record or replay job runs.", labels=("operation",)
    )
    per_job = {
        field: GaugeMetricFamily(f"{PREFIX}_{name}", help_text, labels=("operation",))
        for field, name, help_text, _scale in _PER_JOB
    }
    for job in Job:
        name = job.name.lower()
        code = values.get((job, Field.STATE))
        if code is None:
            continue
        for i, state in enumerate(STATES):
            states.add_metric([name, state], 1 if i == code else 0)
        running.add_metric([name], 1 if code in (STATES.index("running"), STATES.index("stopping")) else 0)
        for field, _name, _help, scale in _PER_JOB:
            if (job, field) in values:
                per_job[field].add_metric([name], values[(job, field)] * scale)
    yield states
    yield running
    yield from per_job.values()
    for field, name, help_text in (
        (Field.REPEATS_DONE, "replay_repeats_done", "Rounds of the replay completed."),
        (Field.REPEAT, "replay_repeat", "Rounds the replay was asked for."),
    ):
        family = GaugeMetricFamily(f"{PREFIX}_{name}", help_text)
        if (Job.REPLAY, field) in values:
            family.add_metric([], values[(Job.REPLAY, field)])
        yield family
