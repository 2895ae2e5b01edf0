#!/usr/bin/env bash
# Downloads through a gateway from an owner that closes idle keep-alive connections after 1 s
# (bench/keepalive-owner.py), by curl at limited rates: each body whole or short (SHA-256), and the
# gateway's spector_forwarder_spliced_drains_total. A body of 20 MB is spliced; the owner's FIN
# then arrives while a slow client still has part of it to read (bench/README.md).
#   bench/splice-owner-fin.sh [JAR] [runs=3] [rates="3M 5M 8M"]
# JAR: run that spector-cli-*-all.jar (an older build) instead of bin/spector. CURL_OPTS: more curl
# options, e.g. CURL_OPTS=--http1.0 for an old client. Prints the body bytes the gateway spliced
# and those it sent in all (spector_forwarder_spliced_bytes_total, ..._bytes_total{to-client}).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jar=${1:-}; runs=${2:-3}; rates=${3:-"3M 5M 8M"}
w=$(mktemp -d); pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$w"' EXIT
head -c 20000000 /dev/urandom > "$w/big"; want=$(sha256sum < "$w/big")
python3 "$root/bench/keepalive-owner.py" 19996 "$w/big" 1.0 & pids+=($!)
head -c 32 /dev/urandom | base64 -w0 | tr -d '=+/' > "$w/secret"
export SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=owner-0=http://127.0.0.1:19996 \
  SPECTOR_SERVER_PORT=19995 SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false \
  SPECTOR_SECURITY_JWT_HMAC_SECRET=$(cat "$w/secret") SPECTOR_SERVER_ACCESS_LOG=off
if [ -n "$jar" ]; then java -Xmx256m -jar "$jar" gateway > "$w/gw.log" 2>&1 & else "$root/bin/spector" gateway > "$w/gw.log" 2>&1 & fi
pids+=($!)
for i in $(seq 1 600); do curl -sf -o /dev/null http://127.0.0.1:19995/actuator/health && break; sleep 0.2; done
token=$("$root/bin/spector" token --secret-file "$w/secret" --tenant bench --ttl 3600)
whole=0; short=0
for rate in $rates; do
  for r in $(seq 1 "$runs"); do
    # shellcheck disable=SC2086 # CURL_OPTS is a list of options
    size=$(curl -s ${CURL_OPTS:-} -H "Authorization: Bearer $token" --limit-rate "$rate" -o "$w/got" -w '%{size_download}' \
      http://127.0.0.1:19995/api/v1/namespaces/bench/big || true)
    if [ "$(sha256sum < "$w/got")" = "$want" ]; then whole=$((whole + 1)); else short=$((short + 1)); echo "rate $rate: short, $size bytes"; fi
  done
done
metrics=$(curl -s http://127.0.0.1:19995/actuator/prometheus)
series() { awk -v n="$1" 'index($0, n) == 1 {print $2}' <<< "$metrics"; }
echo "whole $whole short $short drains $(series spector_forwarder_spliced_drains_total)" \
  "spliced_bytes $(series spector_forwarder_spliced_bytes_total)" \
  "to_client_bytes $(series 'spector_forwarder_bytes_total{direction="to-client"}')"
