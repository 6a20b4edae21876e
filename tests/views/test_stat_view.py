"""``mediadriver stat`` filters and live table; ``mediadriver streams`` (StreamStat format)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from driver.client import Aeron
from driver.concurrent.counter_types import (
    CounterInfo,
    channel_status_key,
    channel_status_label,
    decode_counter,
    stream_position_key,
    stream_position_label,
)
from driver.status.driver_snapshot import DriverSnapshot
from driver.status.system_counters import FIRST_FREE_COUNTER_ID
from driver.views.stat_view import CounterFilter, render_table
from driver.views.streams import render_streams, stream_lines
from tests.support.recording_counters import REC_POS_TYPE_ID, rec_pos_key, rec_pos_label

UDP = "aeron:udp?endpoint=localhost:40456"
IPC = "aeron:ipc"


def stream(
    cid: int, type_id: int, name: str, reg: int, value: int, session: int, stream_id: int, channel: str
) -> CounterInfo:
    key = stream_position_key(reg, session, stream_id, channel)
    label = stream_position_label(name, reg, session, stream_id, channel, 0 if type_id == 4 else None)
    return decode_counter(cid, type_id, key, label, value)


COUNTERS = [
    decode_counter(0, 0, b"\0\0\0\0", "Bytes sent", 100),
    decode_counter(25, 7, channel_status_key(UDP), channel_status_label("rcv-channel", UDP), 1),
    stream(28, 12, "pub-pos (sample)", 2, 300, 11, 1001, UDP),
    stream(29, 1, "pub-lmt", 2, 900, 11, 1001, UDP),
    stream(30, 2, "snd-pos", 2, 290, 11, 1001, UDP),
    stream(32, 4, "sub-pos", 1, 280, 11, 1001, UDP),
    stream(33, 3, "rcv-hwm", 3, 290, 11, 1001, UDP),
    stream(34, 5, "rcv-pos", 3, 285, 11, 1001, UDP),
    stream(35, 10, "per-image", 3, 1, 11, 1001, UDP),
    stream(40, 12, "pub-pos (sample)", 4, 64, 12, 7, IPC),
    stream(41, 1, "pub-lmt", 4, 128, 12, 7, IPC),
    stream(42, 4, "sub-pos", 5, 64, 12, 7, IPC),
]


def ids(f: CounterFilter) -> list[int]:
    return [c.counter_id for c in f.apply(COUNTERS)]


def test_filters() -> None:
    assert ids(CounterFilter.from_options()) == [c.counter_id for c in COUNTERS]
    assert ids(CounterFilter.from_options(types=["rcv-pos"])) == [34]
    assert ids(CounterFilter.from_options(types=["sub-pos,rcv-hwm", "0"])) == [0, 32, 33, 42]
    assert ids(CounterFilter.from_options(types=["pub-pos (sample)"])) == [28, 40]
    assert ids(CounterFilter.from_options(streams=["7"])) == [40, 41, 42]
    assert ids(CounterFilter.from_options(streams=["7", "1001"], types=["pub-lmt"])) == [29, 41]
    assert ids(CounterFilter.from_options(channels=["localhost:40456"])) == [25, 28, 29, 30, 32, 33, 34, 35]
    assert ids(CounterFilter.from_options(channels=["ipc", "nothing"], types=["sub-pos"])) == [42]
    assert not CounterFilter.from_options().active
    with pytest.raises(ValueError, match="--stream 'x' is not a stream id"):
        CounterFilter.from_options(streams=["x"])
    with pytest.raises(ValueError, match="unknown counter type 'bogus'"):
        CounterFilter.from_options(types=["bogus"])


def snapshot(counters: list[CounterInfo]) -> DriverSnapshot:
    return DriverSnapshot(Path("/d/cnc.dat"), 15, 99, 0, 5_000_000_000, 1_000, counters)


def test_live_table_shows_types_streams_and_rates() -> None:
    before = snapshot(COUNTERS)
    after = snapshot(
        [
            *COUNTERS[:1],
            *(
                c if c.counter_id != 34 else stream(34, 5, "rcv-pos", 3, 2285, 11, 1001, UDP)
                for c in COUNTERS[1:]
            ),
        ]
    )
    text = render_table(after, CounterFilter.from_options(streams=["1001"]), before, 2.0, now_ms=1_500)
    lines = text.splitlines()
    assert re.match(
        r"\d\d:\d\d:\d\d - Aeron Stat \(CnC v15\), pid 99, heartbeat 0\.5 s ago, 7 of 12 counters$", lines[0]
    )
    assert lines[1].split() == ["ID", "TYPE", "VALUE", "PER", "SECOND", "SESSION", "STREAM", "LABEL"]
    row = next(line for line in lines if line.lstrip().startswith("34 "))
    assert row.split()[:6] == ["34", "rcv-pos", "2,285", "1,000", "11", "1001"]
    assert row.endswith(f"rcv-pos: 3 11 1001 {UDP}")
    assert len(lines) == 2 + 7


def test_live_table_of_a_stopped_driver_says_so() -> None:
    stopped = DriverSnapshot(Path("/d/cnc.dat"), 15, 99, 0, 5_000_000_000, 0, COUNTERS)
    first = render_table(stopped, now_ms=1_795_769_879_097).splitlines()[0]
    assert first.endswith("pid 99, driver stopped, 12 of 12 counters")


def test_stream_lines_use_stream_stat_format() -> None:
    assert stream_lines(COUNTERS) == [
        f"sessionId=11 streamId=1001 channel={UDP} : pub-pos (sample):2:300 pub-lmt:2:900 snd-pos:2:290 "
        "sub-pos:1:280 rcv-hwm:3:290 rcv-pos:3:285 <unknown>:3:1",
        "sessionId=12 streamId=7 channel=aeron:ipc : pub-pos (sample):4:64 pub-lmt:4:128 sub-pos:5:64",
    ]
    assert render_streams(Path("/d/cnc.dat"), []) == "Command `n Control file /d/cnc.dat"


def mediadriver(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "driver", *args], capture_output=True, text=True, timeout=20)


def test_cli_filters_streams_and_table_on_our_driver(driver_process) -> None:
    driver = driver_process()
    d = str(driver.aeron_dir)
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        for c in COUNTERS[1:]:  # our driver has no streams yet: clients can make the same counters
            if c.stream_key is not None:
                key = stream_position_key(
                    c.registration_id or 0, c.session_id or 0, c.stream_id or 0, c.channel or ""
                )
            else:
                key = channel_status_key(UDP)
            aeron.add_counter(c.type_id, c.label, key).set(c.value)
        full = mediadriver("stat", "--dir", d, "--once")
        by_stream = mediadriver("stat", "--dir", d, "--once", "--stream", "7")
        by_type = mediadriver("stat", "--dir", d, "--once", "--type", "rcv-pos,2", "--channel", "40456")
        table = mediadriver("stat", "--dir", d, "--once", "--table", "--type", "client-heartbeat")
        streams = mediadriver("streams", "--dir", d, "--once")
        streams_ipc = mediadriver("streams", "--dir", d, "--once", "--channel", "ipc")
        bad = mediadriver("stat", "--dir", d, "--once", "--type", "rcv-posx")
    for result in (full, by_stream, by_type, table, streams, streams_ipc):
        assert result.returncode == 0, result.stderr
    lines = full.stdout.splitlines()
    assert len(lines) == 2 + FIRST_FREE_COUNTER_ID + 1 + 11  # header, the driver's counters, client heartbeat, the client's
    assert by_stream.stdout.splitlines()[0][8:] == lines[0][8:]  # same header (but for the time)
    picked = by_stream.stdout.splitlines()[2:]
    first = FIRST_FREE_COUNTER_ID + 1  # the client's counters follow its heartbeat, in COUNTERS order
    assert [line.split(":")[0].strip() for line in picked] == [str(first + i) for i in (8, 9, 10)]
    assert set(picked) <= set(lines[2:])
    assert [line.split(" - ")[1] for line in by_type.stdout.splitlines()[2:]] == [
        f"snd-pos: 2 11 1001 {UDP}",
        f"rcv-pos: 3 11 1001 {UDP}",
    ]
    assert "client-heartbeat" in table.stdout.splitlines()[2] and len(table.stdout.splitlines()) == 3
    assert streams.stdout.splitlines() == [f"Command `n Control file {d}/cnc.dat", *stream_lines(COUNTERS)]
    assert streams_ipc.stdout.splitlines()[1:] == stream_lines(COUNTERS)[1:]
    assert bad.returncode == 2 and "unknown counter type 'rcv-posx'" in bad.stderr


def test_live_views_refresh_until_ctrl_c(driver_process) -> None:
    driver = driver_process()
    for command in (["stat", "--type", "system", "--stream", "1"], ["streams"]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "driver", *command, "--dir", str(driver.aeron_dir), "--interval", "0.1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # Wait for two screens (interpreter start-up can be slow on a loaded machine), then Ctrl-C.
        chunks: list[str] = []
        reader = threading.Thread(
            target=lambda p=proc, c=chunks: c.extend(iter(lambda: p.stdout.read(1), ""))
        )
        reader.start()
        deadline = time.monotonic() + 20
        while "".join(chunks).count("\033[H\033[2J") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
        reader.join(timeout=10)
        out, err = "".join(chunks), proc.stderr.read()
        proc.stderr.close()
        proc.stdout.close()
        assert proc.returncode == 0, err
        screens = out.split("\033[H\033[2J")[1:]
        assert len(screens) >= 2, out
        if command[0] == "stat":
            assert (
                "pid" in screens[-1] and f"0 of {FIRST_FREE_COUNTER_ID} counters" in screens[-1]
            )  # system counters have no stream
        else:
            assert f"Command `n Control file {driver.aeron_dir}/cnc.dat" in screens[-1]


# --- the archive's rec-pos counters (type 100) ------------------------------------------------------------------

REC_POS = decode_counter(
    50, REC_POS_TYPE_ID, rec_pos_key(9, 11, "127.0.0.1:40111"), rec_pos_label(9, 11, 1001, UDP), 282
)
REC_POS_ELSEWHERE = decode_counter(
    51, REC_POS_TYPE_ID, rec_pos_key(10, 99, "aeron:ipc"), rec_pos_label(10, 99, 5, IPC), 64
)


def test_streams_show_recording_positions_beside_the_stream_positions() -> None:
    assert stream_lines([*COUNTERS, REC_POS, REC_POS_ELSEWHERE]) == [
        f"sessionId=11 streamId=1001 channel={UDP} : pub-pos (sample):2:300 pub-lmt:2:900 snd-pos:2:290 "
        "sub-pos:1:280 rcv-hwm:3:290 rcv-pos:3:285 <unknown>:3:1 rec-pos:9:282",
        "sessionId=12 streamId=7 channel=aeron:ipc : pub-pos (sample):4:64 pub-lmt:4:128 sub-pos:5:64",
        "sessionId=99 streamId=5 channel=aeron:ipc : rec-pos:10:64",  # its stream is not on this driver
    ]


def test_table_and_filters_know_rec_pos() -> None:
    counters = [*COUNTERS, REC_POS]
    assert [c.counter_id for c in CounterFilter.from_options(types=["rec-pos"]).apply(counters)] == [50]
    assert 50 in [c.counter_id for c in CounterFilter.from_options(streams=["1001"]).apply(counters)]
    text = render_table(snapshot(counters), CounterFilter.from_options(types=["100"]), now_ms=1_000)
    row = text.splitlines()[2]
    assert row.split()[:5] == ["50", "rec-pos", "282", "11", "1001"]
    assert row.endswith(f"rec-pos: 9 11 1001 {UDP}")


def test_stat_and_streams_read_rec_pos_counters_a_client_added(
    embedded_driver, capsys: pytest.CaptureFixture[str]
) -> None:
    from driver.cli import main

    driver = embedded_driver()
    d = str(driver.aeron_dir)
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        for c in COUNTERS[2:]:
            key = stream_position_key(
                c.registration_id or 0, c.session_id or 0, c.stream_id or 0, c.channel or ""
            )
            aeron.add_counter(c.type_id, c.label, key).set(c.value)
        rec = aeron.add_counter(REC_POS_TYPE_ID, REC_POS.label, rec_pos_key(9, 11, "127.0.0.1:40111"))
        rec.set(4096)
        assert main(["stat", "--dir", d, "--once"]) == 0
        stat = capsys.readouterr().out
        assert main(["stat", "--dir", d, "--once", "--type", "rec-pos"]) == 0
        only_rec = capsys.readouterr().out
        assert main(["streams", "--dir", d, "--once"]) == 0
        streams = capsys.readouterr().out
    assert re.search(rf"^ *{rec.id}: +4,096 - rec-pos: 9 11 1001 {re.escape(UDP)}$", stat, re.M)
    assert only_rec.splitlines()[2:] == [f"{rec.id:3d}: {4096:20,d} - rec-pos: 9 11 1001 {UDP}"]
    line = next(line for line in streams.splitlines() if line.startswith("sessionId=11 "))
    assert line.endswith("rcv-pos:3:285 <unknown>:3:1 rec-pos:9:4096")
