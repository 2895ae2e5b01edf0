#!/usr/bin/env bash
# What a held SSE stream keeps on the gateway's heap, class by class (issue 14): a reference owner
# (:19171), one gateway started by `bin/spector gateway` (:19170, access log off), a live-object
# histogram (`jmap -histo:live`, which collects first) with 50 streams opened and closed, then again
# while SseIdleMain holds N streams of /api/v1/events; prints the difference per stream, largest
# first.
#   bench/sse-census.sh [streams=2000] [rows=40]
set -euo pipefail
[ -n "${DEBUG:-}" ] && set -x
root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
streams=${1:-2000}
rows=${2:-40}
source "$root/bench/processes.sh"
bench_jar=$root/bench/target/benchmarks.jar
[ -f "$bench_jar" ] || (cd "$root" && ./mvnw -B -q package -pl bench -am -DskipTests) >&2

credentials
start_owner 19171
env SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=owner-0=http://127.0.0.1:19171 \
  SPECTOR_SERVER_PORT=19170 SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false \
  SPECTOR_SECURITY_JWT_HMAC_SECRET="$(cat "$work/secret")" SPECTOR_SERVER_ACCESS_LOG=off \
  JAVA_OPTS="-Dio.netty.leakDetection.level=disabled ${JAVA_OPTS:-}" "$root/bin/spector" gateway > "$work/gateway.log" 2>&1 &
gateway=$!
pids+=($gateway)
wait_for http://127.0.0.1:19170/actuator/health

sse() { java -Xmx512m -cp "$bench_jar" com.spectrayan.spector.bench.SseIdleMain 127.0.0.1 19170 /api/v1/events "$1" "$2" \
  "$auth" "X-Spector-Namespace: bench"; }
sse 50 1 | head -n 1
sleep 2
jmap -histo:live "$gateway" > "$work/before.txt"
sse "$streams" 30 > "$work/client.out" 2>&1 &
pids+=($!)
for i in $(seq 1 600); do grep -q "ESTABLISHED\|FAILED" "$work/client.out" 2>/dev/null && break; sleep 0.1; done
head -n 1 "$work/client.out"
grep -q ESTABLISHED "$work/client.out" || { tail -5 "$work/gateway.log"; exit 1; }
sleep 3
jmap -histo:live "$gateway" > "$work/holding.txt"
python3 - "$work/before.txt" "$work/holding.txt" "$streams" "$rows" <<'PY'
import re, sys
def histogram(path):
    d = {}
    for line in open(path):
        m = re.match(r'\s*\d+:\s+(\d+)\s+(\d+)\s+(\S+)', line)
        if m:
            d[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    return d
before, holding, n, rows = histogram(sys.argv[1]), histogram(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
diff = sorted((((b - before.get(k, (0, 0))[1]) / n, (c - before.get(k, (0, 0))[0]) / n, k)
               for k, (c, b) in holding.items()), reverse=True)
print("live heap per held stream: %.0f bytes" % sum(d[0] for d in diff))
print("bytes/stream  objects/stream  class")
for b, c, k in diff[:rows]:
    print("%12.1f  %14.2f  %s" % (b, c, k))
PY
