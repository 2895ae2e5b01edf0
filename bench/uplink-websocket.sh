#!/usr/bin/env bash
# Issue 12: a WebSocket echo through /relay against the same echo direct: N text messages each
# way on one connection (ping-pong for the round-trip time, then a burst), every echo checked in
# order. UplinkWebSocketMain starts a reference owner (its /ws echo), a gateway (uplink v2) and a
# worker with one link in one JVM on free loopback ports. On a build whose relay answers upgrades
# 501 it prints "relayed upgrades not available on this build" and exits 0.
#   bench/uplink-websocket.sh [messages=10000]
#   bench/uplink-websocket.sh [messages] --direct ws://... --relay ws://... [--token T]   # any two URLs
# Needs bench/target/benchmarks.jar (./mvnw -B package -pl bench -am -DskipTests).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jar=$root/bench/target/benchmarks.jar
[ -f "$jar" ] || { echo "no $jar: run ./mvnw -B package -pl bench -am -DskipTests first" >&2; exit 1; }
messages=${1:-10000}
shift || true
# Bounded: the main class has its own 5-minute watchdog; timeout is the second line.
exec timeout --kill-after=10s 6m java -Xms64m -Xmx512m ${JAVA_OPTS:-} -cp "$jar" \
  com.spectrayan.spector.bench.UplinkWebSocketMain --messages "$messages" "$@"
