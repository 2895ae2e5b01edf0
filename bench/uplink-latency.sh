#!/usr/bin/env bash
# The latency of status.get and of a small relay, with the uplink idle and while a large relay runs
# on the same uplink, plus the large relay's throughput (issue #4). One JVM: a reference owner as the
# upstream, a gateway on a free loopback port and a worker on its uplink (UplinkLatencyMain).
#   bench/uplink-latency.sh [--samples 200] [--warmup 50] [--rounds 4] [--bulk-mib 200] [--bulk-only SECONDS]
# Needs bench/target/benchmarks.jar (./mvnw -B package -pl bench -am -DskipTests), which holds the
# gateway, worker and owner. JAVA_OPTS is passed to the JVM (e.g. a flight recording).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jar=$root/bench/target/benchmarks.jar
if [ ! -f "$jar" ]; then
  echo "no $jar: run ./mvnw -B package -pl bench -am -DskipTests first" >&2
  exit 1
fi
# Bounded: the main class has its own 10-minute watchdog; timeout is the second line.
exec timeout --kill-after=10s 11m java -Xms64m -Xmx512m ${JAVA_OPTS:-} \
  -cp "$jar" com.spectrayan.spector.bench.UplinkLatencyMain "$@"
