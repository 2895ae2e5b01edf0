#!/usr/bin/env bash
# Issue 12: a 1 GiB relay download and a 1 GiB relay upload through a gateway and a worker, each
# its own process started with -Xmx128m (and native memory tracking), and their memory before,
# during and after: heap used (jcmd GC.heap_info), NMT "Other" committed (where direct buffers and
# Netty's Unsafe allocations land), RSS, and the gateway's own gauge of Netty's direct memory
# (/actuator/prometheus). The upstream is a reference owner (bin/spector owner, its own JVM and
# heap, not measured).
#   bench/uplink-memory.sh [protocol=v2] [gib=1] [sample_s=2]
# Ports: GATEWAY_PORT (19170), UPSTREAM_PORT (19174), all on 127.0.0.1. Uses bin/spector (the
# spector-cli jar). Every wait is bounded; each transfer has curl --max-time 900.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
protocol=${1:-v2}
gib=${2:-1}
every=${3:-2}
gw_port=${GATEWAY_PORT:-19170}
up_port=${UPSTREAM_PORT:-19174}
bytes=$((gib * 1024 * 1024 * 1024))
state=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$state"
}
trap cleanup EXIT
for port in $gw_port $up_port; do
  if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then echo "port $port is taken" >&2; exit 1; fi
done
mem_opts="-Xmx128m -XX:NativeMemoryTracking=summary"
token=bench-memory-worker-token-0123456789
printf %s "$token" > "$state/token"
hash=$(printf %s "$token" | sha256sum | cut -d' ' -f1)

"$root/bin/spector" owner --node-id up --port $up_port --host 127.0.0.1 --data-dir "$state/up" \
  > "$state/owner.log" 2>&1 &
pids+=($!)
JAVA_OPTS="$mem_opts -Dspector.cell.role=gateway -Dspector.cell.id=bench \
  -Dspector.cell.ring-members=up=http://127.0.0.1:$up_port -Dspector.server.port=$gw_port \
  -Dspector.server.host=127.0.0.1 -Dspector.routing.redis.enabled=false -Dspector.security.enabled=false \
  -Dspector.uplink.tokens=w=$hash" "$root/bin/spector" gateway > "$state/gateway.log" 2>&1 &
gw=$!
pids+=($gw)
for i in $(seq 1 300); do curl -sf -o /dev/null http://127.0.0.1:$gw_port/actuator/health && break; sleep 0.1; done
JAVA_OPTS="$mem_opts" "$root/bin/spector" worker --gateway ws://127.0.0.1:$gw_port/uplink --id w \
  --token-file "$state/token" --target echo=http://127.0.0.1:$up_port/api/v1/namespaces/bench \
  --admin-port -1 --uplinks 1 --uplink-protocol "$protocol" > "$state/worker.log" 2>&1 &
wk=$!
pids+=($wk)
relay=http://127.0.0.1:$gw_port/relay/w/echo
for i in $(seq 1 300); do curl -sf -o /dev/null "$relay/echo" && break; sleep 0.1; done
curl -sf -o /dev/null "$relay/echo" || { echo "no relay through the gateway"; tail "$state"/*.log; exit 1; }
grep -q "over spector-uplink.$protocol" "$state/gateway.log" || { echo "the link does not speak $protocol" >&2; grep -i uplink "$state/gateway.log" >&2; exit 1; }
# The launcher execs the JVM: these pids are the JVMs'.
for p in $gw $wk; do tr '\0' ' ' < /proc/$p/cmdline | grep -q -- '-Xmx128m' || { echo "pid $p has no -Xmx128m" >&2; exit 1; }; done

mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
# One sample of a JVM: heap used (KiB), NMT Other committed (KiB), RSS (KiB).
printf 'GC.heap_info\nVM.native_memory summary\n' > "$state/jcmd"
sample_jvm() {
  jcmd "$1" -f "$state/jcmd" 2>/dev/null | awk -v rss="$(awk '/VmRSS/ {print $2}' /proc/$1/status)" '
    /total [0-9]+K, used [0-9]+K/ { for (i = 1; i <= NF; i++) if ($i == "used") { v = $(i+1); sub(/K.*/, "", v); heap += v } }
    /^-  *Other \(reserved=/ { match($0, /committed=[0-9]+KB/); other = substr($0, RSTART + 10, RLENGTH - 12) }
    END { printf "%s %s %s\n", heap == "" ? 0 : heap, other == "" ? 0 : other, rss }'
}
netty_direct() {
  curl -sf --max-time 5 http://127.0.0.1:$gw_port/actuator/prometheus \
    | awk '/^spector_netty_direct_memory_used_bytes/ { printf "%d\n", $2; found = 1 } END { if (!found) print -1 }'
}
# A sample line: phase, then gateway heap/other/rss (KiB), netty direct (bytes), worker heap/other/rss.
sample() { echo "$1 $(sample_jvm $gw) $(netty_direct) $(sample_jvm $wk)" >> "$state/samples"; }
gc_both() { jcmd $gw GC.run > /dev/null; jcmd $wk GC.run > /dev/null; }
sampler() { while :; do sample "$1"; sleep "$every"; done; }

for i in $(seq 1 20); do curl -sf -o /dev/null "$relay/stream?bytes=1048576&chunk=262144"; done   # warm-up
gc_both; sample before
truncate -s $bytes "$state/upload"

run() { # $1 phase name, then curl arguments
  local phase=$1; shift
  sampler "$phase" & local s=$!
  local out
  out=$(curl -sS -o /dev/null --max-time 900 -w '%{http_code} %{size_download} %{size_upload} %{time_total}' "$@") || true
  kill $s; wait $s 2>/dev/null || true
  echo "$phase: HTTP/bytes down/bytes up/seconds: $out"
}
run download "$relay/stream?bytes=$bytes&chunk=262144"
gc_both; sample after-download
run upload -T "$state/upload" "$relay/objects/big"
gc_both; sample after-upload
echo

echo "memory ($protocol, $gib GiB each way, -Xmx128m each; MiB; before and after-* rows: one sample after a jcmd GC.run in both; download and upload rows: the max over samples every ${every}s; gw netty: the gateway's spector_netty_direct_memory_used_bytes)"
awk '
  { p = $1; n[p]++
    for (i = 2; i <= 8; i++) { if (!(p SUBSEP i in m) || $i > m[p, i]) m[p, i] = $i } }
  END {
    printf "%-16s %3s | %8s %8s %8s %10s | %8s %8s %8s\n", "phase", "n", "gw heap", "gw other", "gw rss", "gw netty", "wk heap", "wk other", "wk rss"
    split("before download after-download upload after-upload", order, " ")
    for (k = 1; k <= 5; k++) { p = order[k]; if (!(p in n)) continue
      printf "%-16s %3d | %8.1f %8.1f %8.1f %10.2f | %8.1f %8.1f %8.1f\n", p, n[p], m[p,2]/1024, m[p,3]/1024, m[p,4]/1024, m[p,5]/1048576, m[p,6]/1024, m[p,7]/1024, m[p,8]/1024 }
  }' "$state/samples"
for p in $gw $wk; do kill -0 $p 2>/dev/null || { echo "pid $p died" >&2; exit 1; }; done
grep -ci "OutOfMemory" "$state"/gateway.log "$state"/worker.log || true
