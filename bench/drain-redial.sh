#!/usr/bin/env bash
# A gateway's drain as a worker sees it (PROTOCOL.md section 9.8): how soon after one replica's
# SIGTERM the worker can be relayed to through another, while a slow relay still runs on the
# draining one.
#   bench/drain-redial.sh [JAR]
# Real processes on 127.0.0.1: a reference owner (:19321), gateways A (:19320) and B (:19330)
# without Redis, HAProxy in TCP mode in front of them (:19329, `balance first`: A while it
# listens), and one worker with one link dialled through HAProxy. A relay through A that takes
# about 10 s (3 MiB in 64 KiB chunks 200 ms apart), then SIGTERM to A, then a relay through B
# every 100 ms until one is answered 200. Prints when that was, the slow relay's outcome, when A
# exited, and the worker's log lines about its link. JAR: the spector-cli jar (default: this tree's).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
J=$(readlink -f "${1:-$(ls "$root"/spector-cli/target/spector-cli-*-all.jar | head -n 1)}")
for b in haproxy curl bc; do command -v $b >/dev/null || { echo "needs $b"; exit 1; }; done
W=$(mktemp -d); cd "$W"
head -c 48 /dev/urandom | base64 | tr -d '\n' > secret
head -c 32 /dev/urandom | base64 | tr -d '\n=/+' > worker.token
hash=$(sha256sum < worker.token | cut -d' ' -f1)
TOKEN=$(java -jar $J token --secret-file secret --tenant acme --ttl 3600)
pids=()
trap 'kill ${pids[@]} 2>/dev/null; rm -rf "$W"' EXIT
java -Xmx128m -jar $J owner --node-id owner-0 --port 19321 --host 127.0.0.1 --members owner-0 > owner.log 2>&1 & pids+=($!)
gw() { env SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=owner-0=http://127.0.0.1:19321 SPECTOR_SERVER_PORT=$2 SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false SPECTOR_SECURITY_JWT_HMAC_SECRET="$(cat secret)" SPECTOR_SERVER_ACCESS_LOG=off SPECTOR_UPLINK_TOKENS="w=$hash" SPECTOR_SERVER_PEER_PORT=-1 java -Xmx128m -jar $J gateway > gw-$1.log 2>&1 & pids+=($!); eval "pid_$1=$!"; }
gw a 19320; gw b 19330
cat > haproxy.cfg <<CFG
global
  maxconn 200
defaults
  mode tcp
  timeout connect 1s
  timeout client 120s
  timeout server 120s
  retries 3
  option redispatch
frontend f
  bind 127.0.0.1:19329
  default_backend gws
backend gws
  balance first
  server a 127.0.0.1:19320 check inter 200ms
  server b 127.0.0.1:19330 check inter 200ms
CFG
for p in 19320 19330 19321; do for i in $(seq 1 150); do curl -fs -o /dev/null http://127.0.0.1:$p/actuator/health && break; curl -fs -o /dev/null http://127.0.0.1:$p/health && break; sleep 0.1; done; done
haproxy -f haproxy.cfg -db > haproxy.log 2>&1 & pids+=($!)
sleep 0.5
java -Xmx128m -jar $J worker --gateway ws://127.0.0.1:19329/uplink --uplinks 1 --admin-port -1 --id w --token-file worker.token --target echo=http://127.0.0.1:19321/api/v1/namespaces/bench > worker.log 2>&1 & pids+=($!)
for i in $(seq 1 100); do curl -fs -o /dev/null -H "Authorization: Bearer $TOKEN" http://127.0.0.1:19320/relay/w/echo/echo && break; sleep 0.1; done
echo "relay through A: $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" http://127.0.0.1:19320/relay/w/echo/echo)"
echo "relay through B before: $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" http://127.0.0.1:19330/relay/w/echo/echo)"
# a slow relay through A: 3 MB in 64 KiB chunks, 200 ms apart (about 10 s)
curl -s -o slow.out -w 'slow relay through A: %{http_code} %{size_download} bytes in %{time_total}s\n' -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:19320/relay/w/echo/stream?bytes=3145728&chunk=65536&delayMs=200" > slow.txt &
slow=$!
sleep 1
t0=$(date +%s.%N); kill -TERM $pid_a
for i in $(seq 1 100); do
  c=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" http://127.0.0.1:19330/relay/w/echo/echo)
  if [ "$c" = 200 ]; then echo "relay through B: 200, $(echo "$(date +%s.%N) - $t0" | bc) s after A's SIGTERM"; break; fi
  sleep 0.1
done
wait $slow; cat slow.txt
wait $pid_a 2>/dev/null; echo "A exited $(echo "$(date +%s.%N) - $t0" | bc) s after its SIGTERM"
grep -E "sent away|going away|connected to|re-dial" worker.log | head -8
grep -E "draining|drained" gw-a.log | head -3
