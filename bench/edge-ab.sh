#!/usr/bin/env bash
# Two builds of the gateway side by side with direct and nginx, in one run, with routing, edge
# auth and metrics on: what a change to the hot path costs, as ratios (these machines are noisy).
#   bench/edge-ab.sh OLD_JAR NEW_JAR [rounds=3] [seconds=10] [connections=32]
# OLD_JAR / NEW_JAR: spector-cli-*-all.jar of each build (e.g. from a `git worktree` of the old
# commit: ./mvnw -B package -pl spector-cli -am -DskipTests). Environment: WARM_S (JVM warm-up
# per build and size, default 30), JAVA_OPTS for both gateways, OLD_JAVA_OPTS / NEW_JAVA_OPTS for
# one of them (two JVM flag sets on one jar: pass the same jar twice). SYSCALLS=N: instead of the
# rates, system calls per forwarded 1 KiB request (SIZE=1m: 1 MiB) of old, new and nginx (strace
# -c -f during N requests of ab -k over 8 connections, after a warm-up): a count a noisy machine
# does not move. POST_BYTES=N: every request a POST with an N-byte body (Content-Length), the
# backend's nginx answering it 405 (counted in the errors column): what the gateway's handling of a
# small request body costs, e.g. reading it whole before the owner connection (request-buffer-bytes).
# Pinning as ../shared/bench/compare.sh: wrk on CPU 0, the backend and the proxies on CPU 1.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,8p' "$0"; exit 2; }
old_jar=$(readlink -f "$1"); new_jar=$(readlink -f "$2")
ROUNDS=${3:-3}; SECS=${4:-10}; CONNS=${5:-32}
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SPECTOR_SHARED:-$root/../shared}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}/spector-bench}
for b in nginx wrk taskset; do command -v $b >/dev/null || { echo "needs $b (../shared/bench/setup.sh installs it)"; exit 1; }; done
mkdir -p "$BENCH_DIR"/{logs,tmp,www/api/v1/namespaces/bench}
for d in "$BENCH_DIR/www" "$BENCH_DIR/www/api/v1/namespaces/bench"; do
  [ -f "$d/1k" ] || head -c 1024 /dev/urandom > "$d/1k"
  [ -f "$d/1m" ] || head -c 1048576 /dev/urandom > "$d/1m"
done
for c in backend.conf nginxproxy.conf; do sed "s#@DIR@#$BENCH_DIR#g" "$shared/bench/conf/$c" > "$BENCH_DIR/$c"; done

if [ "$(nproc)" -ge 2 ]; then PW="taskset -c 0"; PP="taskset -c 1"; else PW=""; PP=""; fi
L=$BENCH_DIR/logs; OUT=$BENCH_DIR/edge-ab-$(date +%Y%m%d-%H%M%S).tsv
declare -A PORT=([direct]=19000 [nginx]=19001 [old]=19005 [new]=19006)
declare -A PREFIX=([direct]="" [nginx]="" [old]=/api/v1/namespaces/bench [new]=/api/v1/namespaces/bench)
declare -A PID=()
TARGETS=(direct nginx old new)
started=()
stop_all() {
  for f in backend nproxy; do [ -f $L/$f.pid ] && kill "$(cat $L/$f.pid)" 2>/dev/null; rm -f $L/$f.pid; done
  for p in "${started[@]}"; do kill -- -"$p" 2>/dev/null || kill "$p" 2>/dev/null; done
}
trap stop_all EXIT

secret=$(head -c 48 /dev/urandom | base64 | tr -d '\n')
printf '%s' "$secret" > "$BENCH_DIR/edge-ab-secret"
token=$(java -jar "$new_jar" token --secret-file "$BENCH_DIR/edge-ab-secret" --tenant bench --ttl 86400)
AUTH="Authorization: Bearer $token"

$PP nginx -e $L/startup.err -p "$BENCH_DIR" -c "$BENCH_DIR/backend.conf"
$PP nginx -e $L/startup.err -p "$BENCH_DIR" -c "$BENCH_DIR/nginxproxy.conf"
for build in old new; do
  jar=$old_jar; opts=${OLD_JAVA_OPTS:-${JAVA_OPTS:--Xms64m -Xmx256m}}
  [ $build = new ] && { jar=$new_jar; opts=${NEW_JAVA_OPTS:-${JAVA_OPTS:--Xms64m -Xmx256m}}; }
  setsid $PP env SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=bench=http://127.0.0.1:19000 \
    SPECTOR_SERVER_PORT=${PORT[$build]} SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false \
    SPECTOR_SECURITY_JWT_HMAC_SECRET="$secret" \
    java $opts -Dio.netty.leakDetection.level=disabled -jar "$jar" gateway \
    > $L/$build.log 2>&1 &
  started+=($!); PID[$build]=$!
done
for t in "${TARGETS[@]}"; do
  ok=0; for i in $(seq 1 600); do curl -sf -H "$AUTH" -o /dev/null "http://127.0.0.1:${PORT[$t]}${PREFIX[$t]}/1k" && { ok=1; break; }; sleep 0.1; done
  [ $ok = 1 ] || { echo "$t did not answer on port ${PORT[$t]} (see $L)"; exit 1; }
done
pids_of() { case $1 in direct) pgrep -P "$(cat $L/backend.pid)";; nginx) pgrep -P "$(cat $L/nproxy.pid)";;
  *) echo "${PID[$1]}"; pgrep -P "${PID[$1]}" || true;; esac; }
if [ -n "${SYSCALLS:-}" ]; then
  for command in ab strace; do command -v $command >/dev/null || { echo "SYSCALLS needs $command"; exit 1; }; done
  url() { echo "http://127.0.0.1:${PORT[$1]}${PREFIX[$1]}/${SIZE:-1k}"; }
  for t in old new nginx; do timeout 120 ab -q -k -n $((SYSCALLS * 2)) -c 8 -H "$AUTH" "$(url $t)" > /dev/null; done
  for t in old new nginx; do
    out=$BENCH_DIR/syscalls-$t.txt
    pid=${PID[$t]:-$(pids_of nginx | head -1)} # a gateway's JVM (-f: its threads), nginx's one worker
    timeout 300 strace -c -f -q -o "$out" -p "$pid" & st=$!
    sleep 1 # strace attaches to every thread
    timeout 300 ab -q -k -n "$SYSCALLS" -c 8 -H "$AUTH" "$(url $t)" | awk '/Failed|Non-2xx/'
    kill -INT $st; wait $st 2>/dev/null || true
    echo "== $t: system calls per request ($SYSCALLS requests, 8 keep-alive connections)"
    awk -v n="$SYSCALLS" '$NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ && $NF != "total" {printf "  %-16s %6.2f\n", $NF, $4/n; t+=$4}
      END {printf "  %-16s %6.2f\n", "all", t/n}' "$out" | sort -k2 -nr | head -12
  done
  exit 0
fi
cpu_ticks() { local s=0; for p in "$@"; do set -- $(awk '{print $14, $15}' /proc/$p/stat 2>/dev/null); s=$((s+${1:-0}+${2:-0})); done; echo $s; }
ms() { awk '{v=$1; if (v~/us$/){sub(/us/,"",v);v/=1000} else if (v~/ms$/){sub(/ms/,"",v)} else if (v~/s$/){sub(/s/,"",v);v*=1000}; printf "%.2f", v}'; }
WRK_POST=()
if [ -n "${POST_BYTES:-}" ]; then
  printf 'wrk.method = "POST"\nwrk.body = string.rep("x", %d)\nwrk.headers["Content-Type"] = "application/octet-stream"\n' \
    "$POST_BYTES" > "$BENCH_DIR/post.lua"
  WRK_POST=(-s "$BENCH_DIR/post.lua")
fi
runwrk() { $PW wrk -t1 -c$CONNS -d${3}s --latency "${WRK_POST[@]}" -H "$AUTH" "http://127.0.0.1:${PORT[$1]}${PREFIX[$1]}/$2" 2>&1; }
WARM_S=${WARM_S:-30}
echo "warming up: ${WARM_S} s per build and size..."
for f in 1k 1m; do for t in "${TARGETS[@]}"; do
  case $t in old|new) runwrk $t $f "$WARM_S" >/dev/null;; *) runwrk $t $f 3 >/dev/null;; esac; done; done
echo -e "round\tsize\ttarget\trps\tp50_ms\tp99_ms\terrors\tcpu_us_per_req" | tee "$OUT"
n=${#TARGETS[@]}
for r in $(seq 1 "$ROUNDS"); do for f in 1k 1m; do for k in $(seq 0 $((n-1))); do
  t=${TARGETS[$(( (k + r - 1) % n ))]}
  pp=$(pids_of $t); c0=$(cpu_ticks $pp)
  out=$(runwrk $t $f "$SECS"); c1=$(cpu_ticks $pp)
  rps=$(echo "$out" | awk '/Requests\/sec/{print $2}'); nreq=$(echo "$out" | awk '/requests in/{print $1}')
  p50=$(echo "$out" | awk '$1=="50%"{print $2}' | ms); p99=$(echo "$out" | awk '$1=="99%"{print $2}' | ms)
  err=$(echo "$out" | awk '/Non-2xx/{n+=$NF} /Socket errors/{gsub(",","");n+=$4+$6+$8+$10} END{print n+0}')
  us=$(awk -v a=$c0 -v b=$c1 -v n=${nreq:-0} 'BEGIN{printf "%.1f", n? (b-a)*1e4/n : 0}')
  echo -e "$r\t$f\t$t\t$rps\t$p50\t$p99\t$err\t$us" | tee -a "$OUT"
done; done; done
python3 - "$OUT" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print("\nsummary (medians of rounds; cpu_us/req counts the proxy process only; 'direct' counts the backend)")
print("size  target   rps        x_direct  x_nginx  p99_ms   cpu_us/req")
for s in ("1k", "1m"):
    med = {}
    for t in ("direct", "nginx", "old", "new"):
        sel = [r for r in rows if r["size"] == s and r["target"] == t]
        med[t] = tuple(statistics.median(float(r[k]) for r in sel) for k in ("rps", "p99_ms", "cpu_us_per_req"))
    for t, (rps, p99, cpu) in med.items():
        print(f"{s:5} {t:8} {rps:10.0f} {rps/med['direct'][0]:8.2f} {rps/med['nginx'][0]:8.2f} {p99:8.2f} {cpu:10.1f}")
    print(f"{s:5} new/old  rps {med['new'][0]/med['old'][0]:.3f}  cpu/req {med['new'][2]/med['old'][2]:.3f}")
PY
