#!/usr/bin/env bash
# Issue 12: two bulk relays on one uplink, one with a reader that stops reading after 1 MiB: the
# other's throughput against its solo throughput (target >= 90 % on v2), and whether the stalled
# one resumes and completes when its reader does (v2) or what happens instead (v1: the gateway
# cancels a reader that fell 64 MiB behind). UplinkStallMain once per protocol, one JVM each.
#   bench/uplink-stall.sh [mib=200] [stall-max-seconds=60]
# Needs bench/target/benchmarks.jar (./mvnw -B package -pl bench -am -DskipTests).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jar=$root/bench/target/benchmarks.jar
[ -f "$jar" ] || { echo "no $jar: run ./mvnw -B package -pl bench -am -DskipTests first" >&2; exit 1; }
mib=${1:-200}
cap=${2:-60}
for v in v2 v1; do
  echo "=== protocol $v"
  # Bounded: the main class has its own 10-minute watchdog; timeout is the second line.
  timeout --kill-after=10s 11m java -Xms64m -Xmx512m ${JAVA_OPTS:-} -cp "$jar" \
    com.spectrayan.spector.bench.UplinkStallMain --protocol $v --mib "$mib" --stall-max-seconds "$cap"
  echo
done
