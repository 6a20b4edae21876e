#!/usr/bin/env python3
"""Build the Grafana dashboard for the aio-media-driver exporter with grafana-foundation-sdk.

    python tools/grafana/build_dashboard.py            # (re)write tools/grafana/aeron-media-driver.json
    python tools/grafana/build_dashboard.py --check    # exit 1 if the committed JSON is out of date

Every query uses the metrics of ``driver/exporter/collector.py`` and filters by the ``$instance`` variable.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from grafana_foundation_sdk.builders import common, dashboard, prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import (
    BigValueColorMode,
    BigValueGraphMode,
    BigValueTextMode,
    GraphDrawStyle,
    LegendDisplayMode,
    LegendPlacement,
)
from grafana_foundation_sdk.models.dashboard import (
    Dashboard,
    DashboardCursorSync,
    DataSourceRef,
    Threshold,
    ThresholdsMode,
    VariableRefresh,
    VariableSort,
)

OUTPUT = Path(__file__).resolve().parent / "aeron-media-driver.json"
UID = "aeron-media-driver"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
SEL = 'instance=~"$instance"'  # every series is filtered by the instance variable


def query(expr: str, legend: str, ref_id: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref_id).datasource(DATASOURCE)


def rate(metric: str, matchers: str = "") -> str:
    return f"rate({metric}{{{matchers + ',' if matchers else ''}{SEL}}}[$__rate_interval])"


def graph(title: str, description: str, unit: str, targets: list[tuple[str, str]], span: int = 12):
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(span)
        .height(8)
        .draw_style(GraphDrawStyle.LINE)
        .line_width(1)
        .fill_opacity(10)
        .legend(
            common.VizLegendOptions()
            .display_mode(LegendDisplayMode.LIST)
            .placement(LegendPlacement.BOTTOM)
            .show_legend(True)
        )
    )
    for i, (expr, legend) in enumerate(targets):
        panel = panel.with_target(query(expr, legend, chr(ord("A") + i)))
    return panel


def single(
    title: str, description: str, unit: str, expr: str, legend: str, steps: list[Threshold], span: int
):
    return (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(span)
        .height(4)
        .thresholds(dashboard.ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps(steps))
        .color_mode(BigValueColorMode.VALUE)
        .graph_mode(BigValueGraphMode.NONE)
        .reduce_options(common.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .with_target(query(expr, legend, "A"))
    )


STREAM = "{{instance}} session {{session_id}} stream {{stream_id}} {{channel}}"
RECORDING = "{{instance}} recording {{recording_id}} session {{session_id}} stream {{stream_id}} {{channel}}"


def build() -> dashboard.Dashboard:
    red_green = [Threshold(value=None, color="red"), Threshold(value=1, color="green")]
    age_steps = [Threshold(value=None, color="green"), Threshold(value=5, color="red")]
    errors_steps = [Threshold(value=None, color="green"), Threshold(value=1, color="red")]
    return (
        dashboard.Dashboard("Aeron media driver")
        .uid(UID)
        .description(
            "Counters of an Aeron 1.15.1 media driver (aio-media-driver or Java) from `mediadriver exporter`."
        )
        .tags(["aeron", "media-driver"])
        .refresh("10s")
        .time("now-30m", "now")
        .timezone("browser")
        .tooltip(DashboardCursorSync.CROSSHAIR)
        .with_variable(dashboard.DatasourceVariable("datasource").label("Data source").type("prometheus"))
        .with_variable(
            dashboard.QueryVariable("instance")
            .label("Driver")
            .datasource(DATASOURCE)
            .query("label_values(aeron_up, instance)")
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.ALPHABETICAL_ASC)
            .multi(True)
            .include_all(True)
            .all_value(".*")
        )
        # --- liveness -------------------------------------------------------------------------------
        .with_row(dashboard.Row("Liveness"))
        .with_panel(
            single(
                "Driver up",
                "1 while cnc.dat is ready and the driver heartbeat is fresh (aeron_up).",
                "none",
                f"aeron_up{{{SEL}}}",
                "{{instance}}",
                red_green,
                6,
            )
        )
        .with_panel(
            single(
                "Driver heartbeat age",
                "Seconds since the driver conductor last wrote its heartbeat; clients give up after 10 s.",
                "s",
                f"aeron_driver_heartbeat_age_seconds{{{SEL}}}",
                "{{instance}}",
                age_steps,
                6,
            )
        )
        .with_panel(
            single(
                "Driver pid",
                "Process id from the cnc.dat header; a change means the driver restarted.",
                "none",
                f"aeron_driver_pid{{{SEL}}}",
                "{{instance}}",
                [Threshold(value=None, color="blue")],
                6,
            )
        )
        .with_panel(
            single(
                "Driver uptime",
                "Time since the driver started (cnc.dat start timestamp).",
                "s",
                f"time() - aeron_driver_start_time_seconds{{{SEL}}}",
                "{{instance}}",
                [Threshold(value=None, color="blue")],
                6,
            )
        )
        .with_panel(
            graph(
                "Client heartbeat age",
                "Seconds since each client's last keepalive; the driver times a client out after the client "
                "liveness timeout (dashed).",
                "s",
                [
                    (f"aeron_client_heartbeat_age_seconds{{{SEL}}}", "{{instance}} client {{client_id}}"),
                    (
                        f"aeron_driver_client_liveness_timeout_seconds{{{SEL}}}",
                        "{{instance}} liveness timeout",
                    ),
                ],
                24,
            )
        )
        # --- throughput -----------------------------------------------------------------------------
        .with_row(dashboard.Row("Throughput"))
        .with_panel(
            graph(
                "Bytes sent and received",
                "Driver-wide UDP bytes per second (system counters Bytes sent / Bytes received).",
                "Bps",
                [
                    (rate("aeron_bytes_sent_total"), "{{instance}} sent"),
                    (rate("aeron_bytes_received_total"), "{{instance}} received"),
                ],
            )
        )
        .with_panel(
            graph(
                "Stream rates",
                "Per stream: sender position (sent) and receiver position (rebuilt) advance per second.",
                "Bps",
                [
                    (rate("aeron_stream_position_bytes", 'type="snd-pos"'), "snd " + STREAM),
                    (rate("aeron_stream_position_bytes", 'type="rcv-pos"'), "rcv " + STREAM),
                ],
            )
        )
        .with_panel(
            graph(
                "Status messages and heartbeats",
                "Status messages (receiver to sender) and data heartbeats per second.",
                "ops",
                [
                    (rate("aeron_status_messages_sent_total"), "{{instance}} SMs sent"),
                    (rate("aeron_status_messages_received_total"), "{{instance}} SMs received"),
                    (rate("aeron_heartbeats_sent_total"), "{{instance}} heartbeats sent"),
                    (rate("aeron_heartbeats_received_total"), "{{instance}} heartbeats received"),
                ],
                24,
            )
        )
        # --- NAKs and loss --------------------------------------------------------------------------
        .with_row(dashboard.Row("NAKs and loss"))
        .with_panel(
            graph(
                "NAKs and retransmits",
                "NAKs sent by receivers that saw gaps, NAKs received by senders, and the retransmits they caused.",
                "ops",
                [
                    (rate("aeron_naks_sent_total"), "{{instance}} NAKs sent"),
                    (rate("aeron_naks_received_total"), "{{instance}} NAKs received"),
                    (rate("aeron_retransmits_sent_total"), "{{instance}} retransmits"),
                ],
            )
        )
        .with_panel(
            graph(
                "Loss gap fills and invalid packets",
                "Gaps given up on and filled with padding (data lost for good), and packets the driver dropped.",
                "ops",
                [
                    (rate("aeron_loss_gap_fills_total"), "{{instance}} loss gap fills"),
                    (rate("aeron_invalid_packets_total"), "{{instance}} invalid packets"),
                ],
            )
        )
        .with_panel(
            graph(
                "NAKs per stream",
                "NAKs each image sent (rcv-naks-sent) and each publication received (snd-naks-received) per second;"
                " counters of today's Aeron, absent on a 1.15.1 driver.",
                "ops",
                [
                    (rate("aeron_stream_events_total", 'type="rcv-naks-sent"'), "NAKs sent " + STREAM),
                    (rate("aeron_stream_events_total", 'type="snd-naks-received"'), "NAKs received " + STREAM),
                ],
            )
        )
        .with_panel(
            graph(
                "Retransmitted bytes",
                "Bytes senders sent again because receivers asked (system counter 36 of today's Aeron, absent on a"
                " 1.15.1 driver).",
                "Bps",
                [(rate("aeron_retransmitted_bytes_total"), "{{instance}} retransmitted")],
            )
        )
        # --- lag ------------------------------------------------------------------------------------
        .with_row(dashboard.Row("Lag"))
        .with_panel(
            graph(
                "Subscriber lag",
                "Bytes each subscriber is behind its image (rcv-pos - sub-pos).",
                "bytes",
                [(f"aeron_subscriber_lag_bytes{{{SEL}}}", STREAM + " sub {{registration_id}}")],
                8,
            )
        )
        .with_panel(
            graph(
                "Receive gap",
                "Bytes an image has seen beyond its contiguous position (rcv-hwm - rcv-pos): loss being repaired.",
                "bytes",
                [(f"aeron_receive_gap_bytes{{{SEL}}}", STREAM)],
                8,
            )
        )
        .with_panel(
            graph(
                "Sender backlog",
                "Bytes published but not yet sent (pub-pos sample - snd-pos).",
                "bytes",
                [(f"aeron_sender_backlog_bytes{{{SEL}}}", STREAM)],
                8,
            )
        )
        # --- back pressure --------------------------------------------------------------------------
        .with_row(dashboard.Row("Back pressure"))
        .with_panel(
            graph(
                "Publisher headroom",
                "Bytes a publication may still offer before it is back pressured (pub-lmt - pub-pos).",
                "bytes",
                [(f"aeron_publisher_headroom_bytes{{{SEL}}}", STREAM)],
            )
        )
        .with_panel(
            graph(
                "Flow control",
                "Flow control under/over runs and how often the sender was held back by its flow control limit.",
                "ops",
                [
                    (rate("aeron_flow_control_under_runs_total"), "{{instance}} under runs"),
                    (rate("aeron_flow_control_over_runs_total"), "{{instance}} over runs"),
                    (rate("aeron_sender_flow_control_limits_applied_total"), "{{instance}} limits applied"),
                    (rate("aeron_short_sends_total"), "{{instance}} short sends"),
                ],
            )
        )
        .with_panel(
            graph(
                "Sender back-pressure events per stream",
                "How often each publication's sender had data but the receivers' window was closed (snd-bpe);"
                " a counter of today's Aeron, absent on a 1.15.1 driver.",
                "ops",
                [(rate("aeron_stream_events_total", 'type="snd-bpe"'), STREAM)],
            )
        )
        .with_panel(
            graph(
                "Flow-control receivers",
                "Receivers each multicast or MDC publication's flow control tracks (fc-receivers); a counter of"
                " today's Aeron, absent on a 1.15.1 driver.",
                "none",
                [(f"aeron_flow_control_receivers{{{SEL}}}", STREAM)],
            )
        )
        # --- duty cycles and sockets (today's Aeron's system counters 25..35 and type 14) ----------------
        .with_row(dashboard.Row("Duty cycles and sockets"))
        .with_panel(
            graph(
                "Longest duty cycle",
                "The longest duty cycle of each agent so far, doing its work (system counters 26, 28, 30).",
                "ns",
                [
                    (f"aeron_conductor_max_cycle_time_doing_its_work_in_ns{{{SEL}}}", "{{instance}} conductor"),
                    (f"aeron_sender_max_cycle_time_doing_its_work_in_ns{{{SEL}}}", "{{instance}} sender"),
                    (f"aeron_receiver_max_cycle_time_doing_its_work_in_ns{{{SEL}}}", "{{instance}} receiver"),
                ],
                8,
            )
        )
        .with_panel(
            graph(
                "Duty cycles over threshold",
                "Duty cycles per second that took longer than the threshold (1 ms; system counters 27, 29, 31).",
                "ops",
                [
                    (rate("aeron_conductor_work_cycle_exceeded_threshold_count_total"), "{{instance}} conductor"),
                    (rate("aeron_sender_work_cycle_exceeded_threshold_count_total"), "{{instance}} sender"),
                    (rate("aeron_receiver_work_cycle_exceeded_threshold_count_total"), "{{instance}} receiver"),
                ],
                8,
            )
        )
        .with_panel(
            graph(
                "Bytes mapped and resolution changes",
                "Bytes the driver has mapped (cnc.dat, loss report, logs) and endpoint names that resolved to a new"
                " address (system counters 35 and 25).",
                "bytes",
                [
                    (f"aeron_bytes_currently_mapped{{{SEL}}}", "{{instance}} mapped"),
                    (f"increase(aeron_resolution_changes_total{{{SEL}}}[$__rate_interval])", "{{instance}} re-resolved"),
                ],
                8,
            )
        )
        .with_panel(
            graph(
                "Local socket addresses",
                "The address each channel endpoint socket is bound to (snd-/rcv-local-sockaddr, type 14; 1 while"
                " bound): the port a channel asked with port 0 got.",
                "none",
                [(f"aeron_local_socket_address{{{SEL}}}", "{{instance}} {{type}} {{address}}")],
                24,
            )
        )
        # --- recordings ---------------------------------------------------------------------------------
        .with_row(dashboard.Row("Recordings"))
        .with_panel(
            graph(
                "Recording positions",
                "Position of each recording in progress (the archive's rec-pos counters, one per recorded image).",
                "bytes",
                [(f"aeron_recording_position_bytes{{{SEL}}}", RECORDING)],
                10,
            )
        )
        .with_panel(
            graph(
                "Recording rate",
                "Bytes per second each recording writes to its segment files (rec-pos advance).",
                "Bps",
                [(rate("aeron_recording_position_bytes"), RECORDING)],
                10,
            )
        )
        .with_panel(
            single(
                "Active recordings",
                "Recordings in progress: the archive frees a rec-pos counter when its recording stops.",
                "none",
                f"aeron_recordings_active{{{SEL}}}",
                "{{instance}}",
                [Threshold(value=None, color="blue")],
                4,
            )
        )
        # --- record & replay service (docs/service.md section 9) -----------------------------------
        .with_row(dashboard.Row("Record & replay"))
        .with_panel(
            single(
                "Record & replay jobs",
                "The record and replay jobs of the record & replay service: their current (else last) state.",
                "none",
                f"aeron_service_job_state{{{SEL}}} == 1",
                "{{operation}}: {{state}}",
                [Threshold(value=None, color="blue")],
                4,
            ).text_mode(BigValueTextMode.NAME)
        )
        .with_panel(
            graph(
                "Messages recorded and replayed",
                "Messages per second the recording takes in and the replay forwards.",
                "ops",
                [(rate("aeron_service_job_messages"), "{{instance}} {{operation}}")],
                10,
            )
        )
        .with_panel(
            graph(
                "Job progress",
                "How far each job is: a recording of its count or duration, a replay of all its rounds.",
                "percentunit",
                [(f"aeron_service_job_progress_ratio{{{SEL}}}", "{{instance}} {{operation}}")],
                10,
            )
        )
        .with_panel(
            graph(
                "Replay rounds",
                "Rounds of the replay done, of the rounds asked for.",
                "none",
                [
                    (f"aeron_service_replay_repeats_done{{{SEL}}}", "{{instance}} done"),
                    (f"aeron_service_replay_repeat{{{SEL}}}", "{{instance}} asked"),
                ],
            )
        )
        .with_panel(
            graph(
                "Bytes recorded and replayed",
                "Bytes per second the recording takes in and the replay forwards.",
                "Bps",
                [(rate("aeron_service_job_bytes"), "{{instance}} {{operation}}")],
            )
        )
        # --- errors ---------------------------------------------------------------------------------
        .with_row(dashboard.Row("Errors"))
        .with_panel(
            graph(
                "Errors and client timeouts",
                "Errors the driver observed, clients it timed out and (apart from those) clients that closed "
                "cleanly, per second.",
                "ops",
                [
                    (rate("aeron_errors_total"), "{{instance}} errors"),
                    (rate("aeron_client_liveness_timeouts_total"), "{{instance}} client timeouts"),
                    (rate("aeron_client_closes_total"), "{{instance}} client closes"),
                    (rate("aeron_unblocked_publications_total"), "{{instance}} unblocked publications"),
                    (rate("aeron_unblocked_control_commands_total"), "{{instance}} unblocked commands"),
                ],
            )
        )
        .with_panel(
            single(
                "Distinct errors",
                "Distinct errors in the driver's error log (`mediadriver errors` prints them).",
                "none",
                f"aeron_error_log_distinct_errors{{{SEL}}}",
                "{{instance}}",
                errors_steps,
                6,
            )
        )
        .with_panel(
            single(
                "Errors (total)",
                "Errors counted since the driver started.",
                "none",
                f"aeron_errors_total{{{SEL}}}",
                "{{instance}}",
                errors_steps,
                6,
            )
        )
    )


def number_panels(model: Dashboard) -> Dashboard:
    """Give rows and panels ids 1, 2, ... in layout order (Grafana needs them unique)."""
    for number, panel in enumerate(model.panels or [], start=1):
        panel.id_val = number
    return model


def render() -> str:
    return json.dumps(number_panels(build().build()), cls=JSONEncoder, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="store_true", help="fail if the committed JSON differs from the build"
    )
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not args.output.exists() or args.output.read_text() != text:
            print(f"{args.output} is out of date: run python {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
