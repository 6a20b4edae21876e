"""The analysis report: PNG charts (matplotlib, no pyplot state), report.md and summary.json.

Takes plain Python aggregates, so it knows nothing of Spark and can be tested on its own.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter

LABEL_LENGTH = 60


@dataclass
class Aggregates:
    totals: dict[str, Any]  # entries, bytes_lost, observations, files_with_loss, streams, first_ms, last_ms
    by_channel: list[dict[str, Any]]
    by_source: list[dict[str, Any]]
    by_host: list[dict[str, Any]]
    top_offenders: list[dict[str, Any]]  # per (channel, stream_id), summed over hosts and sessions
    top_images: list[dict[str, Any]]  # single entries
    over_time: list[dict[str, Any]]  # bucket_ms, bytes_lost (by last observation), new_images (by first)
    bucket_ms: int
    files_read: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)


def _utc(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _short(text: str, length: int = LABEL_LENGTH) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"


def _duration(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1_000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def _bar_chart(
    path: Path, title: str, labels: list[str], values: list[int], xlabel: str = "bytes lost"
) -> Path:
    height = max(2.5, 0.4 * len(labels) + 1.2)
    fig = Figure(figsize=(11, height), layout="constrained")
    ax = fig.add_subplot()
    if labels:
        positions = range(len(labels))
        ax.barh(list(positions), values, color="tab:red")
        ax.set_yticks(list(positions), [_short(label) for label in labels], fontsize=8)
        ax.invert_yaxis()
        ax.xaxis.set_major_formatter(EngFormatter(unit="B"))
    else:
        ax.text(0.5, 0.5, "no loss recorded", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    fig.savefig(path, dpi=100)
    return path


def _time_chart(path: Path, agg: Aggregates) -> Path:
    fig = Figure(figsize=(11, 4), layout="constrained")
    ax = fig.add_subplot()
    if agg.over_time:
        times = [datetime.fromtimestamp(r["bucket_ms"] / 1000, UTC) for r in agg.over_time]
        ax.plot(
            times, [r["bytes_lost"] for r in agg.over_time], color="tab:red", marker=".", label="bytes lost"
        )
        ax.set_ylabel("bytes lost (by last observation)")
        ax.yaxis.set_major_formatter(EngFormatter(unit="B"))
        ax.set_ylim(bottom=0)
        ax2 = ax.twinx()
        ax2.plot(
            times,
            [r["new_images"] for r in agg.over_time],
            color="tab:blue",
            marker=".",
            alpha=0.6,
            label="images with new loss",
        )
        ax2.set_ylabel("images first seen losing")
        ax2.set_ylim(bottom=0)
        fig.legend(loc="outside upper right")
        fig.autofmt_xdate()
    else:
        ax.text(0.5, 0.5, "no loss recorded", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(f"Loss over time (UTC, {_duration(agg.bucket_ms) if agg.bucket_ms else '-'} buckets)")
    fig.savefig(path, dpi=100)
    return path


IDENTIFIERS = {"stream", "session"}  # integer columns printed without thousands separators


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    def cell(header: str, value: Any) -> str:
        grouped = isinstance(value, int) and not isinstance(value, bool) and header not in IDENTIFIERS
        return (f"{value:,d}" if grouped else str(value)).replace("|", "\\|")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines.extend(
        "| " + " | ".join(cell(h, v) for h, v in zip(headers, row, strict=True)) + " |" for row in rows
    )
    return lines if rows else [*lines, "| " + " | ".join(["-"] * len(headers)) + " |"]


def write_report(agg: Aggregates, out_dir: Path) -> tuple[Path, Path, list[Path]]:
    """Write the charts, ``report.md`` and ``summary.json`` into ``out_dir``; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    t = agg.totals
    charts = [
        _bar_chart(
            out_dir / "loss_by_channel.png",
            "Bytes lost by channel",
            [r["channel"] for r in agg.by_channel],
            [r["bytes_lost"] for r in agg.by_channel],
        ),
        _bar_chart(
            out_dir / "loss_by_source.png",
            "Bytes lost by source address",
            [r["source"] for r in agg.by_source],
            [r["bytes_lost"] for r in agg.by_source],
        ),
        _bar_chart(
            out_dir / "loss_by_host.png",
            "Bytes lost by driver (host)",
            [r["host"] for r in agg.by_host],
            [r["bytes_lost"] for r in agg.by_host],
        ),
        _bar_chart(
            out_dir / "top_offenders.png",
            "Top offenders: streams by bytes lost",
            [f"{_short(r['channel'], LABEL_LENGTH - 12)} stream {r['stream_id']}" for r in agg.top_offenders],
            [r["bytes_lost"] for r in agg.top_offenders],
        ),
        _time_chart(out_dir / "loss_over_time.png", agg),
    ]
    md = [
        "# Loss report analysis",
        "",
        f"Generated {_utc(int(datetime.now(UTC).timestamp() * 1000))} by `mediadriver analyze-loss`.",
        "",
        "## Summary",
        "",
        *_table(
            [
                "files read",
                "files with loss",
                "files skipped",
                "entries (images)",
                "streams",
                "observations",
                "bytes lost",
                "first observation",
                "last observation",
            ],
            [
                [
                    agg.files_read,
                    t["files_with_loss"],
                    len(agg.skipped),
                    t["entries"],
                    t["streams"],
                    t["observations"],
                    t["bytes_lost"],
                    _utc(t["first_ms"]),
                    _utc(t["last_ms"]),
                ]
            ],
        ),
        "",
    ]
    if agg.skipped:
        md += ["## Skipped files", "", "Truncated or corrupt files, left out of everything below:", ""]
        md += [*_table(["file", "problem"], [[p, r] for p, r in agg.skipped]), ""]
    md += [
        "## Top offenders",
        "",
        "Streams (channel and stream id) by bytes lost, over every driver and session.",
        "",
        "![top offenders](top_offenders.png)",
        "",
    ]
    md += _table(
        ["channel", "stream", "bytes lost", "observations", "images", "hosts"],
        [
            [
                r["channel"],
                r["stream_id"],
                r["bytes_lost"],
                r["observations"],
                r["images"],
                r["hosts"],
            ]
            for r in agg.top_offenders
        ],
    )
    md.append("")
    md += ["## Loss by channel", "", "![loss by channel](loss_by_channel.png)", ""]
    md += _table(
        ["channel", "bytes lost", "observations", "images", "hosts"],
        [[r["channel"], r["bytes_lost"], r["observations"], r["images"], r["hosts"]] for r in agg.by_channel],
    )
    md += ["", "## Loss by source", "", "![loss by source](loss_by_source.png)", ""]
    md += _table(
        ["source", "bytes lost", "observations", "images", "hosts"],
        [[r["source"], r["bytes_lost"], r["observations"], r["images"], r["hosts"]] for r in agg.by_source],
    )
    md += ["", "## Loss by driver", "", "![loss by host](loss_by_host.png)", ""]
    md += _table(
        ["host", "bytes lost", "observations", "images"],
        [[r["host"], r["bytes_lost"], r["observations"], r["images"]] for r in agg.by_host],
    )
    md += ["", "## Top images", "", "Single entries (one image on one driver) by bytes lost.", ""]
    md += _table(
        ["host", "channel", "stream", "session", "source", "observations", "bytes lost", "first", "last"],
        [
            [
                r["host"],
                r["channel"],
                r["stream_id"],
                r["session_id"],
                r["source"],
                r["observation_count"],
                r["total_bytes_lost"],
                _utc(r["first_ms"]),
                _utc(r["last_ms"]),
            ]
            for r in agg.top_images
        ],
    )
    md += [
        "",
        "## Loss over time",
        "",
        "![loss over time](loss_over_time.png)",
        "",
        "A loss report keeps totals per image, not a history: each image's bytes lost are counted in the bucket "
        "of its last observation, and the image is counted as new in the bucket of its first.",
        "",
    ]
    report = out_dir / "report.md"
    report.write_text("\n".join(md), encoding="utf-8")
    summary = out_dir / "summary.json"
    summary.write_text(
        json.dumps({**asdict(agg), "charts": [c.name for c in charts]}, indent=2, default=str) + "\n"
    )
    return report, summary, charts
