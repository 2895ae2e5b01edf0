#!/usr/bin/env bash
# A relay through the replica that holds the worker's link against the same relay sent to another
# replica, which hands it over the peer hop (issue 11), in one run: a 20 MiB download and a
# 20 MiB upload, the median of N runs each, and the median of 50 small relays.
#   bench/relay-peer-hop.sh [runs=5]     (WARM=5: unmeasured transfers per path first)
# Everything on 127.0.0.1: redis-server on :19379, a reference owner as the upstream (:19071), two
# gateway replicas A (:19070, peer :19090) and B (:19080, peer :19091) sharing Redis and a peer
# secret, and one worker with one link, dialled to A only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-5}
bytes=$((20 * 1024 * 1024))
source "$root/bench/processes.sh"

redis-server --port 19379 --bind 127.0.0.1 --save '' --appendonly no > "$work/redis.log" 2>&1 &
pids+=($!)
credentials
peer_secret=$(head -c 33 /dev/urandom | base64 | tr -d '\n')
head -c $bytes /dev/urandom > "$work/upload"

start_owner 19071

gateway() { # name port peer-port
  env SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=owner-0=http://127.0.0.1:19071 \
    SPECTOR_SERVER_PORT="$2" SPECTOR_SERVER_HOST=127.0.0.1 \
    SPECTOR_ROUTING_REDIS_URI=redis://127.0.0.1:19379 \
    SPECTOR_SECURITY_JWT_HMAC_SECRET="$(cat "$work/secret")" SPECTOR_UPLINK_TOKENS="w=$hash" \
    SPECTOR_CELL_PEER_SECRET="$peer_secret" SPECTOR_SERVER_PEER_PORT="$3" \
    SPECTOR_SERVER_PEER_ADDRESS="127.0.0.1:$3" \
    "${java[@]}" gateway > "$work/gateway-$1.log" 2>&1 &
  pids+=($!)
  wait_for "http://127.0.0.1:$2/actuator/health"
}
gateway a 19070 19090
gateway b 19080 19091
"${java[@]}" worker --gateway ws://127.0.0.1:19070/uplink --uplinks 1 --admin-port -1 --id w \
  --token-file "$work/worker.token" --target echo=http://127.0.0.1:19071/api/v1/namespaces/bench \
  > "$work/worker.log" 2>&1 &
pids+=($!)
wait_for -H "$auth" http://127.0.0.1:19070/relay/w/echo/echo
wait_for -H "$auth" http://127.0.0.1:19080/relay/w/echo/echo

stream="stream?bytes=$bytes&chunk=262144"
for port in 19070 19080; do
  for i in $(seq 1 "${WARM:-5}"); do
    curl -sf -o /dev/null -H "$auth" "http://127.0.0.1:$port/relay/w/echo/$stream"
    curl -sf -o /dev/null -H "$auth" -T "$work/upload" "http://127.0.0.1:$port/relay/w/echo/objects/bench"
  done
done
echo -e "path\tdownload_s\tupload_s\tsmall_ms"
for path in "holding:19070" "peer-hop:19080"; do
  name=${path%%:*}; port=${path##*:}
  d=$(for r in $(seq 1 "$runs"); do curl -sf -o /dev/null -H "$auth" -w '%{time_total}\n' "http://127.0.0.1:$port/relay/w/echo/$stream"; done | median)
  u=$(for r in $(seq 1 "$runs"); do curl -sf -o /dev/null -H "$auth" -T "$work/upload" -w '%{time_total}\n' "http://127.0.0.1:$port/relay/w/echo/objects/bench"; done | median)
  s=$(for r in $(seq 1 50); do curl -sf -o /dev/null -H "$auth" -w '%{time_total}\n' "http://127.0.0.1:$port/relay/w/echo/echo"; done | median)
  awk -v n="$name" -v d="$d" -v u="$u" -v s="$s" 'BEGIN { printf "%s\t%.3f\t%.3f\t%.1f\n", n, d, u, s * 1000 }'
done
