#!/usr/bin/env bash
# Issue 12: the p50/p99/max of status.get and of a small relay with the uplink idle and beside a
# 200 MiB relay on the same (one) uplink, over protocol v2 and then v1, and the check of the target
# "loaded p99 <= 1.5 x idle p99 + 1 ms". UplinkLatencyMain once per protocol (one JVM each: a
# reference owner, a gateway and a worker with --uplinks 1).
#   bench/uplink-v2-latency.sh [samples=2000] [warmup=200] [rounds=4]
# Needs bench/target/benchmarks.jar (./mvnw -B package -pl bench -am -DskipTests).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
samples=${1:-2000}
warmup=${2:-200}
rounds=${3:-4}
for v in v2 v1; do
  echo "=== protocol $v"
  "$root/bench/uplink-latency.sh" --protocol $v --uplinks 1 --samples "$samples" --warmup "$warmup" --rounds "$rounds"
  echo
done
