#!/usr/bin/env bash
# The uplink relay against direct HTTP to the same upstream and against `ssh -R`, in one run:
# a 20 MiB download and a 20 MiB upload (median of N runs each), and the latency of a small
# relay while a large one runs on the same uplink.
#   bench/relay-vs-ssh.sh [runs=5]
# Uses `bin/spector demo` (gateway :7070, worker demo-worker whose target echo is the reference
# upstream on :7074) and ../shared/bench/ssh-relay.sh (sshd on :19022, remote forward on :19023).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SPECTOR_SHARED:-$root/../shared}
runs=${1:-5}
state=$(mktemp -d)
bytes=$((20 * 1024 * 1024))
"$root/bin/spector" demo --state-dir "$state" > "$state/demo.log" 2>&1 &
demo=$!
trap 'kill $demo 2>/dev/null; bash "$shared/bench/ssh-relay.sh" stop >/dev/null 2>&1 || true; rm -rf "$state"' EXIT
for i in $(seq 1 300); do [ -f "$state/token" ] && curl -sf -o /dev/null http://127.0.0.1:7070/actuator/health && break; sleep 0.1; done
auth="Authorization: Bearer $(cat "$state/token")"
for i in $(seq 1 100); do
  curl -sf -o /dev/null -H "$auth" http://127.0.0.1:7070/relay/demo-worker/echo/echo && break; sleep 0.1
done
bash "$shared/bench/ssh-relay.sh" start 7074 19023 >/dev/null
head -c $bytes /dev/urandom > "$state/upload"

declare -A DOWN=(
  [direct]="http://127.0.0.1:7074/api/v1/namespaces/demo/stream?bytes=$bytes&chunk=262144"
  [relay]="http://127.0.0.1:7070/relay/demo-worker/echo/stream?bytes=$bytes&chunk=262144"
  [ssh-R]="http://127.0.0.1:19023/api/v1/namespaces/demo/stream?bytes=$bytes&chunk=262144")
declare -A UP=(
  [direct]="http://127.0.0.1:7074/api/v1/namespaces/demo/objects/bench"
  [relay]="http://127.0.0.1:7070/relay/demo-worker/echo/objects/bench"
  [ssh-R]="http://127.0.0.1:19023/api/v1/namespaces/demo/objects/bench")
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo -e "path\tdownload_s\tupload_s\tx_direct_down\tx_direct_up"
declare -A D U
for t in direct relay ssh-R; do
  d=$(for r in $(seq 1 "$runs"); do curl -sf -o /dev/null -H "$auth" -w '%{time_total}\n' "${DOWN[$t]}"; done | median)
  u=$(for r in $(seq 1 "$runs"); do curl -sf -o /dev/null -H "$auth" -T "$state/upload" -w '%{time_total}\n' "${UP[$t]}"; done | median)
  D[$t]=$d; U[$t]=$u
done
for t in direct relay ssh-R; do
  awk -v t=$t -v d=${D[$t]} -v u=${U[$t]} -v dd=${D[direct]} -v du=${U[direct]} \
    'BEGIN { printf "%s\t%.3f\t%.3f\t%.2f\t%.2f\n", t, d, u, d/dd, u/du }'
done

echo
echo "small relay latency (ms), alone and while a 200 MiB relay runs on the same uplink:"
small() { for r in $(seq 1 20); do curl -sf -o /dev/null -H "$auth" -w '%{time_total}\n' http://127.0.0.1:7070/relay/demo-worker/echo/echo; done | median; }
alone=$(small)
curl -sf -o /dev/null -H "$auth" "http://127.0.0.1:7070/relay/demo-worker/echo/stream?bytes=$((200 * 1024 * 1024))&chunk=262144" &
big=$!
sleep 0.3
busy=$(small)
wait $big || true
awk -v a=$alone -v b=$busy 'BEGIN { printf "alone %.1f ms, beside a large relay %.1f ms (x%.1f)\n", a*1000, b*1000, b/a }'
