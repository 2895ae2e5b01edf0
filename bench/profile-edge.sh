#!/usr/bin/env bash
# A JFR profile of the gateway's hot path under a 1 KiB load, sampled every millisecond (the JDK's
# "profile" settings sample Java every 10-20 ms: about 250 samples in 20 s, too few to rank frames
# of 1-3 %; this gives about ten times as many), then its top frames and the callers of the ones
# that matter. The gateway starts as edge-ab.sh starts it: pinned with the nginx backend to CPU 1,
# edge auth, routing, metrics and the access log on; wrk on CPU 0.
#   bench/profile-edge.sh [JAR] [seconds=20] [frames-to-trace...]
# e.g. bench/profile-edge.sh spector-cli/target/spector-cli-*-all.jar 20 ConcurrentHashMap.get Long.toString
# Prints: samples per thread, self and inclusive shares (jfr-top.py), then for each frame to trace
# the code of ours that called it. Work files in $BENCH_DIR/profile-edge.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SPECTOR_SHARED:-$root/../shared}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}/spector-bench}
jar=$(readlink -f "${1:-$(ls "$root"/spector-cli/target/spector-cli-*-all.jar | head -n 1)}")
SECS=${2:-20}
shift $(( $# >= 2 ? 2 : $# ))
for b in nginx wrk taskset jcmd jfr python3; do command -v $b >/dev/null || { echo "needs $b (../shared/bench/setup.sh installs nginx and wrk)"; exit 1; }; done
W=$BENCH_DIR/profile-edge; mkdir -p "$W" "$BENCH_DIR"/{logs,tmp,www/api/v1/namespaces/bench}
[ -f "$BENCH_DIR/www/api/v1/namespaces/bench/1k" ] || head -c 1024 /dev/urandom > "$BENCH_DIR/www/api/v1/namespaces/bench/1k"
sed "s#@DIR@#$BENCH_DIR#g" "$shared/bench/conf/backend.conf" > "$BENCH_DIR/backend.conf"
if [ "$(nproc)" -ge 2 ]; then PW="taskset -c 0"; PP="taskset -c 1"; else PW=""; PP=""; fi
PORT=19007
started=()
cleanup() {
  [ -f "$BENCH_DIR/logs/backend.pid" ] && kill "$(cat "$BENCH_DIR/logs/backend.pid")" 2>/dev/null
  for p in "${started[@]}"; do kill -- -"$p" 2>/dev/null || kill "$p" 2>/dev/null; done
}
trap cleanup EXIT

# The JDK's profile settings with Java sampled every millisecond.
jh=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
python3 - "$jh/lib/jfr/profile.jfc" "$W/1ms.jfc" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
s = re.sub(r'(<event name="jdk.ExecutionSample">.*?<setting name="period"[^>]*>)[^<]*(</setting>)',
           r'\g<1>1 ms\2', s, flags=re.S)
open(sys.argv[2], 'w').write(s)
PY

secret=$(head -c 48 /dev/urandom | base64 | tr -d '\n')
printf '%s' "$secret" > "$W/secret"
token=$(java -jar "$jar" token --secret-file "$W/secret" --tenant bench --ttl 86400)
$PP nginx -e "$BENCH_DIR/logs/startup.err" -p "$BENCH_DIR" -c "$BENCH_DIR/backend.conf"
setsid $PP env SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=bench=http://127.0.0.1:19000 \
  SPECTOR_SERVER_PORT=$PORT SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false \
  SPECTOR_SECURITY_JWT_HMAC_SECRET="$secret" \
  java ${JAVA_OPTS:--Xms64m -Xmx256m} -Dio.netty.leakDetection.level=disabled -jar "$jar" gateway \
  > "$W/gateway.log" 2>&1 &
gp=$!; started+=($gp)
url=http://127.0.0.1:$PORT/api/v1/namespaces/bench/1k
ok=0; for i in $(seq 1 300); do curl -sf -H "Authorization: Bearer $token" -o /dev/null "$url" && { ok=1; break; }; sleep 0.1; done
[ $ok = 1 ] || { echo "the gateway did not answer (see $W/gateway.log)"; exit 1; }

$PW wrk -t1 -c32 -d20s -H "Authorization: Bearer $token" "$url" > /dev/null   # warm-up: C2 settles
$PW wrk -t1 -c32 -d$((SECS + 5))s -H "Authorization: Bearer $token" "$url" > "$W/wrk.txt" &
wp=$!
sleep 2
jcmd "$gp" JFR.start name=edge settings="$W/1ms.jfc" duration="${SECS}s" filename="$W/edge.jfr" > /dev/null
wait $wp
sleep 1
grep -E 'Requests/sec' "$W/wrk.txt"
python3 "$root/bench/jfr-top.py" "$W/edge.jfr" 40 40
[ $# -eq 0 ] && exit 0
jfr print --stack-depth 40 --json --events jdk.ExecutionSample "$W/edge.jfr" > "$W/edge.json"
python3 - "$W/edge.json" "$@" <<'PY'
import collections, json, sys
events = json.load(open(sys.argv[1]))["recording"]["events"]
for target in sys.argv[2:]:
    callers, n = collections.Counter(), 0
    for e in events:
        st = e["values"]["stackTrace"]
        names = [f["method"]["type"]["name"].split('/')[-1] + "." + f["method"]["name"] + ":" + str(f.get("lineNumber"))
                 for f in (st["frames"] if st else [])]
        for i, name in enumerate(names):
            if name.split(':')[0].endswith(target):
                ours = [x for x in names[i + 1:] if any(
                    x.startswith(p) for p in ("Attempt", "RealExchange", "ClientConnection", "Forwarded", "Gateway",
                                              "Upstream", "AccessLog", "Owner", "HeaderFilter", "Request", "Jwt"))]
                callers[" < ".join(ours[:2])] += 1
                n += 1
                break
    print("== %s: %d samples" % (target, n))
    for k, v in callers.most_common(6):
        print("  %5d %s" % (v, k or "(no frame of ours within 40)"))
PY
