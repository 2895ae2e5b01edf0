#!/usr/bin/env bash
# A reproduction of a v2 relay that stops at its initial stream window (bench/README.md, "Uplink v2
# (issue 12)"): N relay downloads of 1 MiB through the demo (gateway :7070, demo-worker's echo
# upstream), each with curl -m 5, and the count of those that carried fewer bytes than asked.
#   bench/relay-short-downloads.sh [n=1000] [protocol=v2]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-1000}
protocol=${2:-v2}
bytes=1048576
state=$(mktemp -d)
"$root/bin/spector" demo --state-dir "$state" --uplink-protocol "$protocol" > "$state/demo.log" 2>&1 &
demo=$!
trap 'kill $demo 2>/dev/null || true; wait $demo 2>/dev/null || true; rm -rf "$state"' EXIT
for i in $(seq 1 300); do [ -f "$state/token" ] && curl -sf -o /dev/null http://127.0.0.1:7070/actuator/health && break; sleep 0.1; done
auth="Authorization: Bearer $(cat "$state/token")"
for i in $(seq 1 100); do curl -sf -o /dev/null -H "$auth" http://127.0.0.1:7070/relay/demo-worker/echo/echo && break; sleep 0.1; done
grep -q "over spector-uplink.$protocol" "$state/demo.log" || { echo "the demo's link does not speak $protocol" >&2; exit 1; }
short=0
for i in $(seq 1 "$n"); do
  got=$(curl -s -o /dev/null -m 5 -H "$auth" -w '%{size_download}' \
    "http://127.0.0.1:7070/relay/demo-worker/echo/stream?bytes=$bytes&chunk=262144" || true)
  if [ "$got" != $bytes ]; then short=$((short + 1)); echo "download $i: $got of $bytes bytes"; fi
done
echo "$protocol: $short of $n relay downloads of $bytes bytes stopped short"
