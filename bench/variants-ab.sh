#!/usr/bin/env bash
# Several gateways at once, each a jar with its own JVM options, beside nginx's proxy: 1 KiB GETs,
# rounds alternating between them, CPU per request from /proc and wrk's p99 (issue 14). For what
# edge-ab.sh cannot do: more than two variants, or one jar under several collectors.
#   bench/variants-ab.sh ROUNDS SECONDS "JAR OPTIONS..." ["JAR OPTIONS..." ...]
# e.g. bench/variants-ab.sh 9 8 "$J -Xms64m -Xmx256m" "$J -XX:+UseParallelGC -Xms8m -Xmx256m"
# A variant "floor:http OPTIONS" or "floor:tcp OPTIONS" is bench's FloorProxy instead of a gateway
# (Netty's two HTTP codecs and nothing else, or a plain byte copy: the floor under a Netty design).
# A variant may begin with "java=PATH " to run under another JVM (e.g. the JDK 25 beside 17).
# A variant "nginx:log" is a second nginx proxy with the same configuration and its access log on:
# JSON lines with the fields the gateway's line has, buffered as an operator would (64 KiB, 1 s).
# Pinned as edge-ab.sh (wrk on CPU 0, the backend, nginx and every gateway on CPU 1); edge auth,
# routing, metrics and the access log on; each gateway warmed WARM_S seconds (default 40). The
# first round still carries C2's compiling, so the summary's medians and minimums skip it.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,14p' "$0"; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SPECTOR_SHARED:-$root/../shared}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}/spector-bench}
ROUNDS=$1; SECS=$2; shift 2
for b in nginx wrk taskset python3; do command -v $b >/dev/null || { echo "needs $b (../shared/bench/setup.sh installs nginx and wrk)"; exit 1; }; done
W=$BENCH_DIR/variants-ab; mkdir -p "$W" "$BENCH_DIR"/{logs,tmp,www/api/v1/namespaces/bench}
[ -f "$BENCH_DIR/www/api/v1/namespaces/bench/1k" ] || head -c 1024 /dev/urandom > "$BENCH_DIR/www/api/v1/namespaces/bench/1k"
for c in backend.conf nginxproxy.conf; do sed "s#@DIR@#$BENCH_DIR#g" "$shared/bench/conf/$c" > "$BENCH_DIR/$c"; done
if [ "$(nproc)" -ge 2 ]; then PW="taskset -c 0"; PP="taskset -c 1"; else PW=""; PP=""; fi
L=$BENCH_DIR/logs
started=()
cleanup() {
  for f in backend nproxy; do [ -f "$L/$f.pid" ] && kill "$(cat "$L/$f.pid")" 2>/dev/null; rm -f "$L/$f.pid"; done
  for p in "${started[@]}"; do kill "$p" 2>/dev/null; done
  true
}
trap cleanup EXIT
first_jar=
for v in "$@"; do case ${v%% *} in *.jar) first_jar=${v%% *}; break ;; esac; done
[ -n "$first_jar" ] || first_jar=$(ls "$root"/spector-cli/target/spector-cli-*-all.jar | head -n 1)
bench_jar=$root/bench/target/benchmarks.jar
secret=$(head -c 48 /dev/urandom | base64 | tr -d '\n'); printf '%s' "$secret" > "$W/secret"
token=$(java -jar "$first_jar" token --secret-file "$W/secret" --tenant bench --ttl 86400)
$PP nginx -e "$L/startup.err" -p "$BENCH_DIR" -c "$BENCH_DIR/backend.conf"
$PP nginx -e "$L/startup.err" -p "$BENCH_DIR" -c "$BENCH_DIR/nginxproxy.conf"
n=0; PIDS=(); URLS=(); NAMES=()
for v in "$@"; do
  java_bin=java; spec=$v
  case $spec in java=*) java_bin=${spec%% *}; java_bin=${java_bin#java=}; spec=${spec#* } ;; esac
  port=$((19010 + n)); jar=${spec%% *}; opts=${spec#"$jar"}
  case $jar in
  nginx:log)
    sed -e "s#listen 127.0.0.1:19001#listen 127.0.0.1:$port#" -e "s#nproxy#nlog-$n#g" \
      -e "s#access_log off;#log_format line escape=json '{\"time\":\"\$time_iso8601\",\"requestId\":\"\$request_id\",\"client\":\"\$remote_addr:\$remote_port\",\"method\":\"\$request_method\",\"path\":\"\$uri\",\"status\":\$status,\"bytesIn\":\$request_length,\"bytesOut\":\$bytes_sent,\"durationMs\":\$request_time,\"upstreamHeadMs\":\"\$upstream_header_time\",\"upstream\":\"\$upstream_addr\"}'; access_log $W/nginx-$n-access.log line buffer=64k flush=1s;#" \
      "$shared/bench/conf/nginxproxy.conf" | sed "s#@DIR@#$BENCH_DIR#g" > "$W/nginx-$n.conf"
    : > "$W/nginx-$n-access.log"
    $PP nginx -e "$L/startup.err" -p "$BENCH_DIR" -c "$W/nginx-$n.conf"
    wpid=; for i in $(seq 1 50); do # its master's pid file, then its worker (at most 5 s)
      [ -s "$L/nlog-$n.pid" ] && wpid=$(pgrep -P "$(cat "$L/nlog-$n.pid")" | head -1) && [ -n "$wpid" ] && break
      sleep 0.1
    done
    [ -n "$wpid" ] || { echo "nginx:log did not start (see $L/startup.err)"; exit 1; }
    started+=("$(cat "$L/nlog-$n.pid")"); PIDS[$n]=$wpid
    URLS[$n]=http://127.0.0.1:$port/api/v1/namespaces/bench/1k; NAMES[$n]=$v; n=$((n + 1))
    continue
    ;;
  floor:*)
    [ -f "$bench_jar" ] || { echo "build bench first: ./mvnw -B package -pl bench -am -DskipTests"; exit 1; }
    # shellcheck disable=SC2086 # the variant's options are a list
    setsid $PP "$java_bin" $opts -Dio.netty.leakDetection.level=disabled -cp "$bench_jar" \
      com.spectrayan.spector.bench.FloorProxy "${jar#floor:}" "$port" 127.0.0.1:19000 > "$W/gateway-$n.log" 2>&1 &
    ;;
  *)
  # shellcheck disable=SC2086 # the variant's options are a list
  setsid $PP env SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=bench=http://127.0.0.1:19000 \
    SPECTOR_SERVER_PORT=$port SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false \
    SPECTOR_SECURITY_JWT_HMAC_SECRET="$secret" \
    "$java_bin" $opts -Dio.netty.leakDetection.level=disabled -jar "$jar" gateway > "$W/gateway-$n.log" 2>&1 &
    ;;
  esac
  started+=($!); PIDS[$n]=$!; URLS[$n]=http://127.0.0.1:$port/api/v1/namespaces/bench/1k; NAMES[$n]=$v; n=$((n + 1))
done
for j in $(seq 0 $((n - 1))); do
  ok=0; for i in $(seq 1 300); do curl -sf -H "Authorization: Bearer $token" -o /dev/null "${URLS[$j]}" && { ok=1; break; }; sleep 0.1; done
  [ $ok = 1 ] || { echo "variant $j did not answer (see $W/gateway-$j.log)"; exit 1; }
done
npid=$(pgrep -P "$(cat "$L/nproxy.pid")" | head -1)
for j in $(seq 0 $((n - 1))); do $PW wrk -t1 -c32 -d"${WARM_S:-40}"s -H "Authorization: Bearer $token" "${URLS[$j]}" > /dev/null; done
OUT=$W/rounds.tsv; : > "$OUT"
one() { # name pid url: rps, CPU µs per request, p99
  local a b req p99
  a=$(awk '{print $14 + $15}' /proc/$2/stat)
  $PW wrk -t1 -c32 -d"${SECS}"s --latency -H "Authorization: Bearer $token" "$3" > "$W/wrk.txt"
  b=$(awk '{print $14 + $15}' /proc/$2/stat)
  req=$(awk '/requests in/{print $1}' "$W/wrk.txt"); p99=$(awk '$1=="99%"{print $2}' "$W/wrk.txt")
  awk -v r="$r" -v t="$1" -v a="$a" -v b="$b" -v n="$req" -v s="$SECS" -v p="$p99" \
    'BEGIN{printf "%s\t%s\t%.0f\t%.2f\t%s\n", r, t, n / s, (b - a) * 1e4 / n, p}' | tee -a "$OUT"
}
for r in $(seq 1 "$ROUNDS"); do
  one nginx "$npid" http://127.0.0.1:19001/api/v1/namespaces/bench/1k
  for j in $(seq 0 $((n - 1))); do one "$j" "${PIDS[$j]}" "${URLS[$j]}"; done
done
for j in $(seq 0 $((n - 1))); do echo "variant $j = ${NAMES[$j]}"; done
python3 - "$OUT" <<'PY'
import collections, statistics, sys
cpu = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, t, rps, us, p99 = line.split("\t")
    if int(r) > 1:
        cpu[t].append(float(us))
print("CPU µs per request after round 1: median (min) of", len(cpu["nginx"]), "rounds")
for t, v in cpu.items():
    print(f"  {t:6} {statistics.median(v):6.2f} ({min(v):.2f})  x nginx {statistics.median(v) / statistics.median(cpu['nginx']):.2f}")
PY
