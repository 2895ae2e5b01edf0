#!/usr/bin/env bash
# What the gateway allocates per 1 KiB request, by class, exactly (issue 14: "5.2 KiB per request").
# JFR's allocation samples are weighted guesses and put 71 % of the bytes on one AsciiString site;
# a census is not a guess. The gateway runs with Epsilon (a collector that never collects), so the
# heap holds every object made: a class histogram before and after N requests, differenced, is the
# allocation of those requests, less what escape analysis removed (it runs warm: C2 has compiled
# the path, as in production).
#   bench/alloc-census.sh [JAR] [requests=100000] [rows=30]
# Set up as profile-edge.sh: the nginx backend, edge auth, routing, metrics and the access log on;
# ab -k -c 32 drives it (warm-up: 30 000 requests first). Prints bytes and objects per request,
# then the top classes. Work files in $BENCH_DIR/alloc-census.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SPECTOR_SHARED:-$root/../shared}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}/spector-bench}
jar=$(readlink -f "${1:-$(ls "$root"/spector-cli/target/spector-cli-*-all.jar | head -n 1)}")
N=${2:-100000}
ROWS=${3:-30}
for b in nginx ab jcmd python3; do command -v $b >/dev/null || { echo "needs $b (../shared/bench/setup.sh installs nginx)"; exit 1; }; done
W=$BENCH_DIR/alloc-census; mkdir -p "$W" "$BENCH_DIR"/{logs,tmp,www/api/v1/namespaces/bench}
[ -f "$BENCH_DIR/www/api/v1/namespaces/bench/1k" ] || head -c 1024 /dev/urandom > "$BENCH_DIR/www/api/v1/namespaces/bench/1k"
sed "s#@DIR@#$BENCH_DIR#g" "$shared/bench/conf/backend.conf" > "$BENCH_DIR/backend.conf"
PORT=19008
started=()
cleanup() {
  [ -f "$BENCH_DIR/logs/backend.pid" ] && kill "$(cat "$BENCH_DIR/logs/backend.pid")" 2>/dev/null
  for p in "${started[@]}"; do kill "$p" 2>/dev/null; done
}
trap cleanup EXIT

secret=$(head -c 48 /dev/urandom | base64 | tr -d '\n')
printf '%s' "$secret" > "$W/secret"
token=$(java -jar "$jar" token --secret-file "$W/secret" --tenant bench --ttl 86400)
nginx -e "$BENCH_DIR/logs/startup.err" -p "$BENCH_DIR" -c "$BENCH_DIR/backend.conf"
# 3 GiB of heap holds the warm-up and N requests at a few KiB each (N up to about 400 000; past
# that Epsilon runs out and the JVM stops); under 32 GiB oops stay compressed, so the sizes are
# the ones a production heap has.
env SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=bench=http://127.0.0.1:19000 \
  SPECTOR_SERVER_PORT=$PORT SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false \
  SPECTOR_SECURITY_JWT_HMAC_SECRET="$secret" \
  java -XX:+UnlockExperimentalVMOptions -XX:+UseEpsilonGC -Xms3g -Xmx3g -XX:+AlwaysPreTouch \
  -Dio.netty.leakDetection.level=disabled -jar "$jar" gateway > "$W/gateway.log" 2>&1 &
gp=$!; started+=($gp)
url=http://127.0.0.1:$PORT/api/v1/namespaces/bench/1k
ok=0; for i in $(seq 1 300); do curl -sf -H "Authorization: Bearer $token" -o /dev/null "$url" && { ok=1; break; }; sleep 0.1; done
[ $ok = 1 ] || { echo "the gateway did not answer (see $W/gateway.log)"; exit 1; }

ab -q -k -n 30000 -c 32 -H "Authorization: Bearer $token" "$url" > /dev/null   # warm-up: C2 settles
jcmd "$gp" GC.class_histogram > "$W/before.txt"
ab -q -k -n "$N" -c 32 -H "Authorization: Bearer $token" "$url" > "$W/ab.txt"
jcmd "$gp" GC.class_histogram > "$W/after.txt"
grep -E '^(Complete|Failed|Non-2xx)' "$W/ab.txt" || true
python3 - "$W/before.txt" "$W/after.txt" "$N" "$ROWS" <<'PY'
import sys
def load(f):
    d = {}
    for line in open(f):
        p = line.split()
        if len(p) >= 4 and p[0].endswith(':'):
            d[p[3]] = (int(p[1]), int(p[2]))
    return d
before, after, n, rows = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
diff = []
for name, (count, size) in after.items():
    c0, s0 = before.get(name, (0, 0))
    diff.append((size - s0, count - c0, name))
diff.sort(reverse=True)
total = sum(d[0] for d in diff)
objects = sum(d[1] for d in diff)
print("per request: %.0f bytes, %.1f objects (%d requests)" % (total / n, objects / n, n))
print("bytes/req  objs/req  class")
for size, count, name in diff[:rows]:
    print("%9.0f %9.2f  %s" % (size / n, count / n, name))
PY
