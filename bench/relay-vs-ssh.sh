#!/usr/bin/env bash
# The uplink relay against direct HTTP to the same upstream and against `ssh -R`, in one run: a
# download and an upload of SIZE MiB (median of N runs each) through the demo's worker over uplink
# protocol v2 and over v1, and the latency of a small relay alone and while a 200 MiB relay runs on
# the same uplink (v2 and v1).
#   [WARM=20] bench/relay-vs-ssh.sh [runs=5] [mib=20]
# Uses `bin/spector demo` (gateway :7070, worker demo-worker whose target echo is the reference
# upstream on :7074), started once with `--uplink-protocol v2` and once with `v1`, and
# ../shared/bench/ssh-relay.sh (sshd on :19022, remote forward on :19023).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SPECTOR_SHARED:-$root/../shared}
runs=${1:-5}
mib=${2:-20}
state=$(mktemp -d)
bytes=$((mib * 1024 * 1024))
demo=
stop_demo() { if [ -n "$demo" ]; then kill "$demo" 2>/dev/null || true; wait "$demo" 2>/dev/null || true; demo=; fi; }
trap 'stop_demo; bash "$shared/bench/ssh-relay.sh" stop >/dev/null 2>&1 || true; rm -rf "$state"' EXIT
start_demo() { # $1: v2 or v1
  rm -f "$state/token"
  "$root/bin/spector" demo --state-dir "$state" --uplink-protocol "$1" > "$state/demo-$1.log" 2>&1 &
  demo=$!
  for i in $(seq 1 300); do [ -f "$state/token" ] && curl -sf -o /dev/null http://127.0.0.1:7070/actuator/health && break; sleep 0.1; done
  auth="Authorization: Bearer $(cat "$state/token")"
  for i in $(seq 1 100); do
    curl -sf -o /dev/null -H "$auth" http://127.0.0.1:7070/relay/demo-worker/echo/echo && break; sleep 0.1
  done
  grep -q "over spector-uplink.$1" "$state/demo-$1.log" || { echo "the demo's link does not speak $1" >&2; exit 1; }
}
head -c $bytes /dev/urandom > "$state/upload"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A D U SMALL BUSY
down() { for r in $(seq 1 "$runs"); do curl -sf -o /dev/null -H "$auth" -w '%{time_total}\n' "$1"; done | median; }
up() { for r in $(seq 1 "$runs"); do curl -sf -o /dev/null -H "$auth" -T "$state/upload" -w '%{time_total}\n' "$1"; done | median; }
small() { for r in $(seq 1 50); do curl -sf -o /dev/null -H "$auth" -w '%{time_total}\n' http://127.0.0.1:7070/relay/demo-worker/echo/echo; done | median; }
stream="stream?bytes=$bytes&chunk=262144"

for v in v2 v1; do
  start_demo $v
  if [ $v = v2 ]; then
    bash "$shared/bench/ssh-relay.sh" start 7074 19023 >/dev/null
    D[direct]=$(down "http://127.0.0.1:7074/api/v1/namespaces/demo/$stream")
    U[direct]=$(up "http://127.0.0.1:7074/api/v1/namespaces/demo/objects/bench")
    D[ssh-R]=$(down "http://127.0.0.1:19023/api/v1/namespaces/demo/$stream")
    U[ssh-R]=$(up "http://127.0.0.1:19023/api/v1/namespaces/demo/objects/bench")
  fi
  # warm up the JIT first: a cold JVM spends as much CPU compiling as relaying in the first GiB,
  # and the demo's one JVM compiles the gateway's, the worker's and the upstream's paths: its
  # 200 MiB downloads fall from 0.94 s to about 0.28 s over the first 15 to 20 (bench/README,
  # eleventh session), so WARM rounds, 20 by default
  for w in $(seq 1 "${WARM:-20}"); do
    curl -sf -o /dev/null -H "$auth" "http://127.0.0.1:7070/relay/demo-worker/echo/stream?bytes=$((200 * 1024 * 1024))&chunk=262144"
    curl -sf -o /dev/null -H "$auth" -T "$state/upload" "http://127.0.0.1:7070/relay/demo-worker/echo/objects/warm"
  done
  D[relay-$v]=$(down "http://127.0.0.1:7070/relay/demo-worker/echo/$stream")
  U[relay-$v]=$(up "http://127.0.0.1:7070/relay/demo-worker/echo/objects/bench")
  SMALL[$v]=$(small)
  curl -sf -o /dev/null -H "$auth" "http://127.0.0.1:7070/relay/demo-worker/echo/stream?bytes=$((200 * 1024 * 1024))&chunk=262144" &
  big=$!
  sleep 0.3
  BUSY[$v]=$(small)
  wait $big || true
  stop_demo
done

echo "$mib MiB, median of $runs"
echo -e "path\tdownload_s\tupload_s\tx_direct_down\tx_direct_up\trate_x_ssh_down\trate_x_ssh_up"
for t in direct relay-v2 relay-v1 ssh-R; do
  awk -v t=$t -v d=${D[$t]} -v u=${U[$t]} -v dd=${D[direct]} -v du=${U[direct]} -v sd=${D[ssh-R]} -v su=${U[ssh-R]} \
    'BEGIN { printf "%s\t%.3f\t%.3f\t%.2f\t%.2f\t%.2f\t%.2f\n", t, d, u, d/dd, u/du, sd/d, su/u }'
done
echo
echo "small relay latency (median of 50), alone and while a 200 MiB relay runs on the same uplink:"
for v in v2 v1; do
  awk -v v=$v -v a=${SMALL[$v]} -v b=${BUSY[$v]} 'BEGIN { printf "%s: alone %.2f ms, beside a large relay %.2f ms (x%.1f)\n", v, a*1000, b*1000, b/a }'
done
