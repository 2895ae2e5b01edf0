#!/usr/bin/env bash
# What the access log costs on the hot path (issue 14): two gateways side by side, one with
# spector.server.access-log=off and one writing to a file, each in front of the same reference
# owner, driven in turns by wrk (1 KiB-ish GET of /echo with a token, so auth, routing and metrics
# are on). Reports per round and as medians: requests/s and gateway CPU µs per request, and the ratios.
#   bench/access-log-cost.sh [rounds=3] [seconds=10] [connections=32]
set -euo pipefail
root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
rounds=${1:-3}; seconds=${2:-10}; conns=${3:-32}
source "$root/bench/processes.sh"
command -v wrk >/dev/null || { echo "needs wrk" >&2; exit 1; }
credentials
start_owner 19181

start_gateway() { # $1 port, $2 access log
  env SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=owner-0=http://127.0.0.1:19181 \
    SPECTOR_SERVER_PORT="$1" SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false \
    SPECTOR_SECURITY_JWT_HMAC_SECRET="$(cat "$work/secret")" SPECTOR_SERVER_ACCESS_LOG="$2" \
    "${java[@]}" gateway > "$work/gateway-$1.log" 2>&1 &
  pids+=($!)
  echo $! > "$work/gateway-$1.pid"
  wait_for "http://127.0.0.1:$1/actuator/health"
}
start_gateway 19182 off
start_gateway 19183 "$work/access.log"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
run() { # $1 port; prints "rps cpu_us_per_request"
  local pid; pid=$(cat "$work/gateway-$1.pid")
  local t0; t0=$(cpu_ticks "$pid")
  local out; out=$(wrk -t2 -c"$conns" -d"${seconds}s" -H "$auth" -H "X-Spector-Namespace: bench" \
    "http://127.0.0.1:$1/api/v1/namespaces/bench/echo" 2>&1)
  local t1; t1=$(cpu_ticks "$pid")
  local requests; requests=$(echo "$out" | awk '/requests in/ {print $1}')
  local rps; rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  echo "$rps $(awk -v d=$((t1 - t0)) -v hz="$hz" -v n="$requests" 'BEGIN {printf "%.1f", d / hz * 1e6 / n}')"
}
for port in 19182 19183; do run "$port" >/dev/null; done # warm both
off=(); on=()
for r in $(seq 1 "$rounds"); do
  off+=("$(run 19182)"); on+=("$(run 19183)")
  echo "round $r: off ${off[-1]} | file ${on[-1]}   (rps, CPU us/request)"
done
m() { printf '%s\n' "$@" | median; }
off_rps=$(m $(printf '%s\n' "${off[@]}" | cut -d' ' -f1)); on_rps=$(m $(printf '%s\n' "${on[@]}" | cut -d' ' -f1))
off_cpu=$(m $(printf '%s\n' "${off[@]}" | cut -d' ' -f2)); on_cpu=$(m $(printf '%s\n' "${on[@]}" | cut -d' ' -f2))
echo "median: off $off_rps rps, $off_cpu us/request | file $on_rps rps, $on_cpu us/request"
awk -v a="$on_rps" -v b="$off_rps" -v c="$on_cpu" -v d="$off_cpu" \
  'BEGIN {printf "access log on / off: rps x%.2f, CPU per request x%.2f\n", a / b, c / d}'
echo "lines written: $(wc -l < "$work/access.log"), dropped: $(curl -s http://127.0.0.1:19183/actuator/prometheus | awk '/^spector_access_log_dropped_total/ {print $NF}')"
