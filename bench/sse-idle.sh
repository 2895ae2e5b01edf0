#!/usr/bin/env bash
# Idle SSE streams through one gateway (issue 14): the gateway's memory per held stream, and its
# health check's latency while it holds them.
#   bench/sse-idle.sh [streams=9000] [hold=20]
# Everything on 127.0.0.1: a reference owner (:19171) whose /api/v1/events the streams read, one
# gateway (:19170) started by `bin/spector gateway` (the launcher's JVM flags and class-data archive,
# JAVA_OPTS added; access log off; the owner pool as it comes: each stream leaves its count,
# spector.routing.gateway.owner-streams), and SseIdleMain holding the streams. The gateway holds two
# sockets per stream (client and owner), so this machine's 20 000 open files per process cap it at
# 9 986 streams. Prints the health check's median and slowest of 300 tries on the admin port
# (:19172, spector.server.admin-port) while it holds them, then of 300 on the client port (curl back
# to back: a few seconds each, so several of the owner's once-a-second bursts; curl at nice -10 when
# run as root, so the prober's own turn on the CPU is not what is measured; PROBE_NICE=0 to not),
# then the gateway's RSS, heap (after a forced GC) and Netty direct memory before and
# while holding, and the growth per stream.
set -euo pipefail
[ -n "${DEBUG:-}" ] && set -x
root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
streams=${1:-9000}
hold=${2:-20}
source "$root/bench/processes.sh"
bench_jar=$root/bench/target/benchmarks.jar
[ -f "$bench_jar" ] || (cd "$root" && ./mvnw -B -q package -pl bench -am -DskipTests) >&2

credentials
start_owner 19171

env SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=owner-0=http://127.0.0.1:19171 \
  SPECTOR_SERVER_PORT=19170 SPECTOR_SERVER_ADMIN_PORT=19172 SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false \
  SPECTOR_SECURITY_JWT_HMAC_SECRET="$(cat "$work/secret")" SPECTOR_SERVER_ACCESS_LOG=off \
  JAVA_OPTS="-Dio.netty.leakDetection.level=disabled ${JAVA_OPTS:-}" "$root/bin/spector" gateway > "$work/gateway.log" 2>&1 &
gateway=$!
pids+=($gateway)
wait_for http://127.0.0.1:19170/actuator/health

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$gateway/status"; }
metric() { # sum of a Prometheus series, e.g. metric 'jvm_memory_used_bytes{area="heap"'
  curl -s http://127.0.0.1:19170/actuator/prometheus | { grep -F "$1" || true; } | awk '{s+=$NF} END {printf "%d", s}'
}
heap_after_gc() { jcmd "$gateway" GC.run >/dev/null 2>&1; sleep 1; metric 'jvm_memory_used_bytes{area="heap"'; }
direct() { metric 'jvm_buffer_memory_used_bytes{id="direct"'; }

# warm: a few streams opened and closed, so the pools, classes and JIT of the path exist before
java -cp "$bench_jar" com.spectrayan.spector.bench.SseIdleMain 127.0.0.1 19170 /api/v1/events 50 1 \
  "$auth" "X-Spector-Namespace: bench" | head -n 1
sleep 2
rss0=$(rss_kib); heap0=$(heap_after_gc); direct0=$(direct)

fifo=$work/client.out
java -Xmx512m -cp "$bench_jar" com.spectrayan.spector.bench.SseIdleMain 127.0.0.1 19170 /api/v1/events \
  "$streams" "$hold" "$auth" "X-Spector-Namespace: bench" > "$fifo" 2>&1 &
client=$!
pids+=($client)
for i in $(seq 1 1200); do grep -q "ESTABLISHED\|FAILED" "$fifo" 2>/dev/null && break; sleep 0.1; done
head -n 1 "$fifo"
grep -q ESTABLISHED "$fifo" || { cat "$work/gateway.log" | tail -5; exit 1; }
sleep 3
# the health checks first: the heap measurement below forces a full collection
nice_n=${PROBE_NICE:-$([ "$(id -u)" = 0 ] && echo -10 || echo 0)}
probe() { nice -n "$nice_n" curl -s -o /dev/null -w '%{time_total}' "$1"; }
admin_times=()
for i in $(seq 1 300); do admin_times+=("$(probe http://127.0.0.1:19172/actuator/health)"); done
times=()
for i in $(seq 1 300); do times+=("$(probe http://127.0.0.1:19170/actuator/health)"); done
health_median=$(printf '%s\n' "${times[@]}" | median)
health_max=$(printf '%s\n' "${times[@]}" | sort -n | tail -n 1)
admin_median=$(printf '%s\n' "${admin_times[@]}" | median)
admin_max=$(printf '%s\n' "${admin_times[@]}" | sort -n | tail -n 1)
rss1=$(rss_kib); heap1=$(heap_after_gc); direct1=$(direct)

per() { echo $(( ($2 - $1) / streams )); }
printf 'streams held          %d\n' "$streams"
printf 'gateway RSS           %d KiB -> %d KiB: %d bytes/stream\n' "$rss0" "$rss1" "$(( (rss1 - rss0) * 1024 / streams ))"
printf 'heap used after GC    %d -> %d bytes: %d bytes/stream\n' "$heap0" "$heap1" "$(per "$heap0" "$heap1")"
printf 'Netty direct memory   %d -> %d bytes: %d bytes/stream\n' "$direct0" "$direct1" "$(per "$direct0" "$direct1")"
over10() { printf '%s\n' "$@" | awk '$1 > 0.010' | wc -l; }
printf 'client port health    median %s s, slowest %s s (300 tries, curl at nice %s), %d over 10 ms\n' \
  "$health_median" "$health_max" "$nice_n" "$(over10 "${times[@]}")"
printf 'client checks over 1 ms, in order: %s\n' "$(printf '%s\n' "${times[@]}" | awk '$1 > 0.001' | tr '\n' ' ')"
printf 'admin port health     median %s s, slowest %s s (300 tries, curl at nice %s), %d over 10 ms\n' \
  "$admin_median" "$admin_max" "$nice_n" "$(over10 "${admin_times[@]}")"
printf 'admin checks over 1 ms, in order: %s\n' "$(printf '%s\n' "${admin_times[@]}" | awk '$1 > 0.001' | tr '\n' ' ')"
wait "$client" || true
tail -n 1 "$fifo"
