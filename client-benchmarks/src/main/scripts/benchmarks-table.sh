#!/usr/bin/env bash
# Runs the BENCHMARKS.md matrix with warren-perf and prints it as one Markdown table: for each
# scenario and figure, the median over the runs of each client, and the ratio Warren / amqp-client.
#
#   ./mvnw -B -DskipTests package
#   client-benchmarks/src/main/scripts/benchmarks-table.sh [RESULTS_DIR]
#
# Every run is a fresh JVM (java -jar client-benchmarks/target/warren-perf.jar ... --json FILE); within
# each repetition the clients alternate (A B, then B A, ...) so neither always runs on a cooler or
# warmer machine. The JSON files and logs stay in RESULTS_DIR (default: a new temporary folder), and
# the table can be printed again from them without running anything:
#
#   java -cp client-benchmarks/target/warren-perf.jar io.warren.perf.BenchmarksTable RESULTS_DIR
#
# Scenarios (against the broker unless they say peer):
#   pubsub SIZE          1 producer, 1 consumer (prefetch 500, multiple ack every 50): publish and consume msg/s
#   confirm SIZE         the same with publisher confirms (window 1000, 100 at 64 KiB, 10 at 1 MiB)
#   latency 10k/s        1 producer paced at 10,000 msg/s, 1 consumer: consumer latency p50/p99
#   heap 16x100x1MiB     16 producers publish 100 messages of 1 MiB each (no queue: the broker drops
#                        them): peak heap, live heap after GC, peak direct memory
#   peer publish SIZE    the client alone publishing to the loopback peer's sink (and the raw reference)
#   peer confirm SIZE    the same with confirms (window 1000)
#   peer consume SIZE    the client alone consuming what the loopback peer's source streams
# Every scenario also records client CPU and allocation per message (publishes + deliveries).
#
# Environment:
#   URI      the broker (default amqp://guest:guest@localhost:5672)
#   CLIENTS  comma-separated clients (default amqp-client,warren when the jar has the Warren driver,
#            else amqp-client)
#   RUNS     repetitions per client and scenario (default 3)
#   TIME     measured seconds per run (default 10)
#   WARMUP   seconds of traffic before measuring (default 3)
#   ONLY     a regular expression: run only the scenarios whose name matches (e.g. ONLY='^peer')
#   JAVA     the java binary (default java); JAVA_OPTS its options (default -Xmx2g)
#   JAR      the warren-perf jar (default client-benchmarks/target/warren-perf.jar beside this script)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
JAR="${JAR:-$here/../../../target/warren-perf.jar}"
JAVA="${JAVA:-java}"
JAVA_OPTS="${JAVA_OPTS:--Xmx2g}"
URI="${URI:-amqp://guest:guest@localhost:5672}"
RUNS="${RUNS:-3}"
TIME="${TIME:-10}"
WARMUP="${WARMUP:-3}"
ONLY="${ONLY:-}"
out="${1:-$(mktemp -d -t warren-benchmarks.XXXXXX)}"
mkdir -p "$out"

if [ ! -f "$JAR" ]; then
  echo "no $JAR: build it first with ./mvnw -B -DskipTests package" >&2
  exit 2
fi
if [ -z "${CLIENTS:-}" ]; then
  if "$JAVA" -cp "$JAR" io.warren.perf.WarrenPerf --client warren --peer sink -C 1 >/dev/null 2>&1; then
    CLIENTS="amqp-client,warren"
  else
    CLIENTS="amqp-client"
    echo "the Warren driver is not in $JAR: running amqp-client only" >&2
  fi
fi
IFS=',' read -r -a clients <<< "$CLIENTS"
specs=()

# scenario NAME FIGURES EXTRA_CLIENT -- WARREN-PERF OPTIONS...
scenario() {
  local name="$1" figures="$2" extra="$3"
  shift 4
  if [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]]; then
    return
  fi
  specs+=("$name=$figures")
  local slug order r c
  slug="$(printf '%s' "$name" | tr -c 'A-Za-z0-9' '-')"
  for ((r = 1; r <= RUNS; r++)); do
    order=("${clients[@]}")
    if ((r % 2 == 0)); then
      order=()
      for ((i = ${#clients[@]} - 1; i >= 0; i--)); do order+=("${clients[i]}"); done
    fi
    if [ -n "$extra" ]; then order+=("$extra"); fi
    for c in "${order[@]}"; do
      echo "[$(date +%T)] $name: $c run $r/$RUNS" >&2
      # shellcheck disable=SC2086
      if ! "$JAVA" $JAVA_OPTS -jar "$JAR" --id "$name" --client "$c" "$@" \
          --json "$out/$slug-$c-$r.json" > "$out/$slug-$c-$r.log" 2>&1; then
        echo "$name: $c run $r failed; its output:" >&2
        tail -n 20 "$out/$slug-$c-$r.log" >&2
        exit 1
      fi
    done
  done
}

timed=(-z "$TIME" --warmup "$WARMUP")
acks=(-q 500 -A 50)
declare -A window=([16]=1000 [1024]=1000 [65536]=100 [1048576]=10)
declare -A label=([16]="16 B" [1024]="1 KiB" [65536]="64 KiB" [1048576]="1 MiB")

for size in 16 1024 65536 1048576; do
  scenario "pubsub ${label[$size]}" sent_rate,received_rate,cpu_ns_per_msg,alloc_bytes_per_msg "" -- \
    -h "$URI" -x 1 -y 1 -s "$size" "${acks[@]}" "${timed[@]}"
done
for size in 16 1024 65536 1048576; do
  scenario "confirm ${label[$size]}" confirmed_rate,confirm_latency_p50_us,confirm_latency_p99_us,cpu_ns_per_msg,alloc_bytes_per_msg "" -- \
    -h "$URI" -x 1 -y 1 -s "$size" -c "${window[$size]}" "${acks[@]}" "${timed[@]}"
done
scenario "latency 10k/s" consumer_latency_p50_us,consumer_latency_p99_us,cpu_ns_per_msg,alloc_bytes_per_msg "" -- \
  -h "$URI" -x 1 -y 1 -s 16 -r 10000 "${acks[@]}" "${timed[@]}"
scenario "heap 16x100x1MiB" peak_heap_bytes,live_heap_peak_bytes,peak_direct_bytes,sent_rate "" -- \
  -h "$URI" -x 16 -y 0 -s 1048576 -C 100 -z 300
for size in 16 1024; do
  scenario "peer publish ${label[$size]}" sent_rate,cpu_ns_per_msg,alloc_bytes_per_msg raw -- \
    --peer sink -s "$size" "${timed[@]}"
  scenario "peer confirm ${label[$size]}" confirmed_rate,confirm_latency_p99_us,cpu_ns_per_msg,alloc_bytes_per_msg raw -- \
    --peer sink -s "$size" -c 1000 "${timed[@]}"
  scenario "peer consume ${label[$size]}" received_rate,cpu_ns_per_msg,alloc_bytes_per_msg raw -- \
    --peer source -s "$size" "${acks[@]}" "${timed[@]}"
done

echo "Machine: $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); $("$JAVA" -version 2>&1 | sed -n 1p)"
echo "Runs: $RUNS per client, ${TIME} s measured after ${WARMUP} s of warmup; results in $out"
echo
"$JAVA" -cp "$JAR" io.warren.perf.BenchmarksTable "$out" "${specs[@]}"
