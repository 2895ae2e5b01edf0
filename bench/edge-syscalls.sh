#!/usr/bin/env bash
# System calls per forwarded request of two gateway builds and nginx (../shared/bench's proxy), side
# by side: a count, not a time, so it holds on a noisy machine (bench/edge-ab.sh gives the rates).
# Each forwards 1 KiB GETs
# over keep-alive connections to the nginx backend of ../shared/bench; `strace -c -f` counts its
# threads' calls during a fixed number of requests (ab -k), after a warm-up without strace.
#   bench/edge-syscalls.sh OLD_JAR NEW_JAR [requests=20000] [connections=8]
# OLD_JAR / NEW_JAR: spector-cli-*-all.jar of each build (as for bench/edge-ab.sh).
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,7p' "$0"; exit 2; }
old_jar=$(readlink -f "$1"); new_jar=$(readlink -f "$2")
N=${3:-20000}; CONNS=${4:-8}
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SPECTOR_SHARED:-$root/../shared}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}/spector-bench}
for b in nginx ab strace; do command -v $b >/dev/null || { echo "needs $b"; exit 1; }; done
mkdir -p "$BENCH_DIR"/{logs,tmp,www/api/v1/namespaces/bench}
for d in "$BENCH_DIR/www" "$BENCH_DIR/www/api/v1/namespaces/bench"; do
  [ -f "$d/1k" ] || head -c 1024 /dev/urandom > "$d/1k"
done
for c in backend.conf nginxproxy.conf; do sed "s#@DIR@#$BENCH_DIR#g" "$shared/bench/conf/$c" > "$BENCH_DIR/$c"; done
L=$BENCH_DIR/logs
declare -A PORT=([old]=19005 [new]=19006 [nginx]=19001)
declare -A PID=()
started=()
stop_all() {
  for f in backend nproxy; do [ -f $L/$f.pid ] && kill "$(cat $L/$f.pid)" 2>/dev/null; rm -f $L/$f.pid; done
  for p in "${started[@]}"; do kill -- -"$p" 2>/dev/null || kill "$p" 2>/dev/null; done
}
trap stop_all EXIT
secret=$(head -c 48 /dev/urandom | base64 | tr -d '\n')
printf '%s' "$secret" > "$BENCH_DIR/edge-syscalls-secret"
token=$(java -jar "$new_jar" token --secret-file "$BENCH_DIR/edge-syscalls-secret" --tenant bench --ttl 86400)
AUTH="Authorization: Bearer $token"
nginx -e $L/startup.err -p "$BENCH_DIR" -c "$BENCH_DIR/backend.conf"
nginx -e $L/startup.err -p "$BENCH_DIR" -c "$BENCH_DIR/nginxproxy.conf"
for build in old new; do
  jar=$old_jar; [ $build = new ] && jar=$new_jar
  setsid env SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=bench=http://127.0.0.1:19000 \
    SPECTOR_SERVER_PORT=${PORT[$build]} SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false \
    SPECTOR_SECURITY_JWT_HMAC_SECRET="$secret" SPECTOR_SERVER_ACCESS_LOG=off \
    java -Xms64m -Xmx256m -Dio.netty.leakDetection.level=disabled -jar "$jar" gateway > $L/sys-$build.log 2>&1 &
  started+=($!); PID[$build]=$!
done
url() { echo "http://127.0.0.1:${PORT[$1]}/api/v1/namespaces/bench/1k"; }
for i in $(seq 1 50); do [ -s $L/nproxy.pid ] && break; sleep 0.1; done
PID[nginx]=$(pgrep -P "$(cat $L/nproxy.pid)" | head -1) # its one worker
for b in old new; do
  ok=0; for i in $(seq 1 600); do curl -sf -H "$AUTH" -o /dev/null "$(url $b)" && { ok=1; break; }; sleep 0.1; done
  [ $ok = 1 ] || { echo "$b did not answer (see $L/sys-$b.log)"; exit 1; }
done
for b in old new nginx; do timeout 120 ab -q -k -n $((N * 2)) -c $CONNS -H "$AUTH" "$(url $b)" > /dev/null; done # warm-up
for b in old new nginx; do
  out=$BENCH_DIR/syscalls-$b.txt
  timeout 300 strace -c -f -q -o "$out" -p "${PID[$b]}" & st=$!
  sleep 1 # strace attaches to every thread
  timeout 300 ab -q -k -n "$N" -c $CONNS -H "$AUTH" "$(url $b)" | awk '/Failed|Non-2xx/'
  kill -INT $st; wait $st 2>/dev/null || true
  echo "== $b: system calls per request ($N requests, $CONNS keep-alive connections)"
  awk -v n="$N" '$NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ && $NF != "total" {printf "  %-16s %6.2f\n", $NF, $4/n; t+=$4}
    END {printf "  %-16s %6.2f\n", "all", t/n}' "$out" | sort -k2 -nr | head -12
done
