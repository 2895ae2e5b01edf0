#!/usr/bin/env bash
# Where a forwarded 1 KiB request's CPU goes, the gateway beside nginx's proxy: user and system
# time and context switches (voluntary: the process waited; involuntary: it was preempted) per
# request, from /proc around the same wrk load, rounds alternating (issue 14).
#   bench/cpu-split.sh [JAR] [seconds=8] [rounds=3]
# Set up as edge-ab.sh: the nginx backend and both proxies pinned to CPU 1, wrk on CPU 0, edge auth,
# routing, metrics and the access log on in the gateway (JAVA_OPTS, default G1 -Xms64m -Xmx256m).
# The first measured round follows a 20 s warm-up. A tool for "is it the kernel or our code?":
# with the same system calls per request (edge-ab.sh SYSCALLS=N), system time and switches that
# match nginx's put the difference in user time. THREADS=1 adds the gateway's CPU per request by
# thread (its event loop, the access log's writer, the JIT's compilers, GC), to tell the steady
# state from C2 still compiling. PERF=SECONDS then profiles the whole gateway process with perf
# (kernel, JIT-compiled code by package, libc, the JVM) for that long under the same load: the
# gateway runs with -XX:+PreserveFramePointer and its JIT symbols come from `jcmd Compiler.perfmap`.
# FLOOR=1 (or http) adds bench's FloorProxy (Netty's two HTTP/1 codecs and nothing else: the floor
# under the gateway's design) as a third target in every round, and with PERF profiles it the same
# way; FLOOR=heads or tcp runs its other modes (heads edited as bytes; a plain byte copy).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SPECTOR_SHARED:-$root/../shared}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}/spector-bench}
jar=$(readlink -f "${1:-$(ls "$root"/spector-cli/target/spector-cli-*-all.jar | head -n 1)}")
SECS=${2:-8}; ROUNDS=${3:-3}
for b in nginx wrk taskset python3; do command -v $b >/dev/null || { echo "needs $b (../shared/bench/setup.sh installs nginx and wrk)"; exit 1; }; done
W=$BENCH_DIR/cpu-split; mkdir -p "$W" "$BENCH_DIR"/{logs,tmp,www/api/v1/namespaces/bench}
[ -f "$BENCH_DIR/www/api/v1/namespaces/bench/1k" ] || head -c 1024 /dev/urandom > "$BENCH_DIR/www/api/v1/namespaces/bench/1k"
for c in backend.conf nginxproxy.conf; do sed "s#@DIR@#$BENCH_DIR#g" "$shared/bench/conf/$c" > "$BENCH_DIR/$c"; done
if [ "$(nproc)" -ge 2 ]; then PW="taskset -c 0"; PP="taskset -c 1"; else PW=""; PP=""; fi
L=$BENCH_DIR/logs; PORT=19007
started=()
cleanup() {
  for f in backend nproxy; do [ -f "$L/$f.pid" ] && kill "$(cat "$L/$f.pid")" 2>/dev/null; rm -f "$L/$f.pid"; done
  for p in "${started[@]}"; do kill -- -"$p" 2>/dev/null || kill "$p" 2>/dev/null; done
  true
}
trap cleanup EXIT
secret=$(head -c 48 /dev/urandom | base64 | tr -d '\n'); printf '%s' "$secret" > "$W/secret"
token=$(java -jar "$jar" token --secret-file "$W/secret" --tenant bench --ttl 86400)
$PP nginx -e "$L/startup.err" -p "$BENCH_DIR" -c "$BENCH_DIR/backend.conf"
$PP nginx -e "$L/startup.err" -p "$BENCH_DIR" -c "$BENCH_DIR/nginxproxy.conf"
setsid $PP env SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=bench=http://127.0.0.1:19000 \
  SPECTOR_SERVER_PORT=$PORT SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false \
  SPECTOR_SECURITY_JWT_HMAC_SECRET="$secret" \
  java ${JAVA_OPTS:--Xms64m -Xmx256m} ${PERF:+-XX:+PreserveFramePointer} -Dio.netty.leakDetection.level=disabled \
  -jar "$jar" gateway > "$W/gateway.log" 2>&1 &
gp=$!; started+=($gp)
url=http://127.0.0.1:$PORT/api/v1/namespaces/bench/1k
if [ -n "${FLOOR:-}" ]; then
  bench_jar=$root/bench/target/benchmarks.jar
  mode=$FLOOR; [ "$mode" = 1 ] && mode=http
  [ -f "$bench_jar" ] || { echo "FLOOR needs bench built: ./mvnw -B package -pl bench -am -DskipTests"; exit 1; }
  setsid $PP java ${JAVA_OPTS:--Xms64m -Xmx256m} ${PERF:+-XX:+PreserveFramePointer} -Dio.netty.leakDetection.level=disabled \
    -cp "$bench_jar" com.spectrayan.spector.bench.FloorProxy "$mode" $((PORT + 1)) 127.0.0.1:19000 > "$W/floor.log" 2>&1 &
  fp=$!; started+=($fp)
  furl=http://127.0.0.1:$((PORT + 1))/api/v1/namespaces/bench/1k
  ok=0; for i in $(seq 1 300); do curl -sf -o /dev/null "$furl" && { ok=1; break; }; sleep 0.1; done
  [ $ok = 1 ] || { echo "the floor proxy did not answer (see $W/floor.log)"; exit 1; }
  $PW wrk -t1 -c32 -d20s "$furl" > /dev/null
fi
ok=0; for i in $(seq 1 300); do curl -sf -H "Authorization: Bearer $token" -o /dev/null "$url" && { ok=1; break; }; sleep 0.1; done
[ $ok = 1 ] || { echo "the gateway did not answer (see $W/gateway.log)"; exit 1; }
npid=$(pgrep -P "$(cat "$L/nproxy.pid")" | head -1)
$PW wrk -t1 -c32 -d20s -H "Authorization: Bearer $token" "$url" > /dev/null
# voluntary and involuntary switches over every thread, then user and system ticks
snap() {
  local v=0 n=0 s
  for s in /proc/$1/task/*/status; do
    v=$((v + $(awk '/^voluntary_ctxt/{print $2}' "$s"))); n=$((n + $(awk '/^nonvoluntary_ctxt/{print $2}' "$s")))
  done
  echo "$v $n $(awk '{print $14, $15}' /proc/$1/stat)"
}
# CPU ticks by thread name (the JVM names its threads; Netty's loops share one prefix)
threads() {
  local t
  for t in /proc/$1/task/*; do echo "$(tr -d ' ' < "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"; done |
    awk '{a[$1] += $2} END {for (k in a) print k, a[k]}' | sort
}
run() {
  local name=$1 pid=$2 u=$3 a b n; shift 3
  [ -n "${THREADS:-}" ] && threads "$pid" > "$W/threads-before"
  a=$(snap "$pid"); $PW wrk -t1 -c32 -d"${SECS}"s "$@" "$u" > "$W/wrk.txt"; b=$(snap "$pid")
  n=$(awk '/requests in/{print $1}' "$W/wrk.txt")
  if [ -n "${THREADS:-}" ]; then
    threads "$pid" > "$W/threads-after"
    join "$W/threads-before" "$W/threads-after" |
      awk -v n="$n" '$3 > $2 {printf "    %-16s %6.2f µs\n", $1, ($3 - $2) * 1e4 / n}'
  fi
  python3 - "$name" "$n" "$SECS" "$a" "$b" <<'PY'
import sys
name, n, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = [y - x for x, y in zip(map(int, sys.argv[4].split()), map(int, sys.argv[5].split()))]
tick = 1e6 / 100  # µs per clock tick (USER_HZ 100)
print(f"{name:8} {n / secs:8.0f} rps   user {d[2] * tick / n:5.1f} µs   system {d[3] * tick / n:5.1f} µs"
      f"   voluntary {d[0] / n:5.2f}   involuntary {d[1] / n:5.2f}  (per request)")
PY
}
for r in $(seq 1 "$ROUNDS"); do
  run nginx "$npid" http://127.0.0.1:19001/api/v1/namespaces/bench/1k
  run spector "$gp" "$url" -H "Authorization: Bearer $token"
  [ -z "${FLOOR:-}" ] || run "floor-$mode" "$fp" "$furl"
done
[ -n "${PERF:-}" ] || exit 0
command -v perf >/dev/null || { echo "PERF needs perf (Debian: linux-perf)"; exit 1; }
profile() { # name pid url [wrk options]: perf of the process under the load, grouped
  local name=$1 pid=$2 u=$3 wp; shift 3
  $PW wrk -t1 -c32 -d"$((PERF + 4))"s "$@" "$u" > "$W/wrk-$name.txt" &
  wp=$!
  sleep 2
  jcmd "$pid" Compiler.perfmap > /dev/null
  perf record -F 4999 -g -p "$pid" -o "$W/perf-$name.data" -- sleep "$PERF" > /dev/null 2>&1
  wait $wp
  perf report -i "$W/perf-$name.data" --no-children --sort dso,sym -q -g none 2>/dev/null > "$W/perf-$name.txt"
  python3 - "$W/perf-$name.txt" "$PERF" "$name" <<'PY'
import collections, re, sys
share = collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\d.]+)%\s+(.+?)\s+\[(.)\]\s+(.*)", line)
    if not m:
        continue
    pct, dso, sym = float(m.group(1)), m.group(2), m.group(4)
    if "kernel" in dso:
        key = "kernel"
    elif "JIT" in dso:  # an inlined tree counts at its root
        key = next((k for p, k in (("spectrayan", "ours"), ("codec.http", "Netty HTTP/1 codec"),
                                    ("netty.channel", "Netty pipeline and channel"), ("netty.handler.flow", "Netty pipeline and channel"),
                                    ("netty.buffer", "Netty buffers"), ("netty", "Netty, other"),
                                    ("java.", "JDK"), ("jdk.", "JDK")) if p in sym), "JIT stubs, other")
    else:
        key = dso.split("/")[-1]
    share[key] += pct
print(f"the whole {sys.argv[3]} process under the load (perf, {sys.argv[2]} s), by where the time went:")
for key, pct in share.most_common(12):
    print(f"  {pct:5.1f} %  {key}")
print("top symbols: " + sys.argv[1])
PY
}
profile spector "$gp" "$url" -H "Authorization: Bearer $token"
[ -z "${FLOOR:-}" ] || profile "floor-$mode" "$fp" "$furl"

