#!/usr/bin/env bash
# Gateway start-up to a healthy /actuator/health, and its resident memory when idle.
#   bench/startup-rss.sh [runs=5]
# Prints one row per run (ms to healthy, idle RSS in MiB) and the medians. JAVA_OPTS defaults to
# the ADR's -Xms64m -Xmx256m. Targets (DESIGN.md section 3): under 0.5 s and under 64 MiB.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-5}
port=${PORT:-19105}
jar=$(ls "$root"/spector-cli/target/spector-cli-*-all.jar 2>/dev/null | head -n 1 || true)
if [ -z "$jar" ]; then
  (cd "$root" && ./mvnw -B package -pl spector-cli -am -DskipTests) >&2
  jar=$(ls "$root"/spector-cli/target/spector-cli-*-all.jar | head -n 1)
fi
secret=startup-bench-secret-0123456789-0123456789
echo -e "run\tms_to_healthy\tidle_rss_mib"
results=()
for r in $(seq 1 "$runs"); do
  start=$(date +%s%N)
  SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=owner-0=http://127.0.0.1:19999 \
  SPECTOR_SERVER_PORT=$port SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false \
  SPECTOR_SECURITY_JWT_HMAC_SECRET=$secret \
    java ${JAVA_OPTS:--Xms64m -Xmx256m} -jar "$jar" gateway > /dev/null 2>&1 &
  pid=$!
  for i in $(seq 1 2000); do
    curl -sf -o /dev/null "http://127.0.0.1:$port/actuator/health" && break
    sleep 0.005
  done
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  sleep 3   # let start-up garbage settle before reading the resident size
  rss_kb=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
  kill $pid; wait $pid 2>/dev/null || true
  printf "%d\t%d\t%.1f\n" "$r" "$ms" "$(echo "$rss_kb / 1024" | bc -l)"
  results+=("$ms $rss_kb")
done
printf '%s\n' "${results[@]}" | python3 -c '
import sys, statistics
rows = [tuple(map(int, l.split())) for l in sys.stdin if l.strip()]
print("median\t%d ms\t%.1f MiB" % (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows) / 1024))'
