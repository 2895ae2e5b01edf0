#!/usr/bin/env bash
# The relay over a TLS uplink (wss://) against a clear-text uplink (ws://), `ssh -R` and direct
# HTTP to the same upstream, in one run: a 20 MiB download and a 20 MiB upload, the median of N
# runs each, with the gateway's TLS on the JDK provider and then on OpenSSL (netty-tcnative).
#   bench/relay-tls.sh [runs=5]     (WARM=5: unmeasured warm-up transfers per uplink and gateway)
# Everything listens on 127.0.0.1: a reference owner as the upstream (:19071), one gateway
# (clear :19070, TLS :19443; the client always speaks clear HTTP to :19070, so only the uplink's
# TLS differs), a worker per uplink kind (one link each), and ../shared/bench/ssh-relay.sh (sshd on
# :19022, remote forward :19023). Certificates are made here with openssl, in a temp dir.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SPECTOR_SHARED:-$root/../shared}
runs=${1:-5}
bytes=$((20 * 1024 * 1024))
on_exit="bash $shared/bench/ssh-relay.sh stop"
source "$root/bench/processes.sh"

# A CA and a server certificate for localhost and 127.0.0.1 (EC P-256, PKCS#8 key).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench CA" \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
  -keyout "$work/tls.key" -out "$work/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > "$work/ext"
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -days 2 \
  -extfile "$work/ext" -out "$work/tls.crt" 2>/dev/null

credentials
head -c $bytes /dev/urandom > "$work/upload"


start_owner 19071
bash "$shared/bench/ssh-relay.sh" start 19071 19023 >/dev/null

start_gateway() { # $1: jdk or openssl
  env SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=owner-0=http://127.0.0.1:19071 \
    SPECTOR_SERVER_PORT=19070 SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false \
    SPECTOR_SECURITY_JWT_HMAC_SECRET="$(cat "$work/secret")" \
    SPECTOR_UPLINK_TOKENS="w-ws=$hash,w-wss=$hash" \
    SPECTOR_SERVER_TLS_CERTIFICATE="$work/tls.crt" SPECTOR_SERVER_TLS_PRIVATE_KEY="$work/tls.key" \
    SPECTOR_SERVER_TLS_PORT=19443 SPECTOR_SERVER_TLS_PROVIDER="$1" \
    "${java[@]}" gateway > "$work/gateway-$1.log" 2>&1 &
  gateway=$!
  pids+=($gateway)
  wait_for http://127.0.0.1:19070/actuator/health
  wait_for --cacert "$work/ca.pem" https://localhost:19443/actuator/health
}

start_workers() {
  "${java[@]}" worker --gateway ws://127.0.0.1:19070/uplink --uplinks 1 --admin-port -1 --id w-ws \
    --token-file "$work/worker.token" --target echo=http://127.0.0.1:19071/api/v1/namespaces/bench \
    > "$work/w-ws.log" 2>&1 &
  pids+=($!)
  "${java[@]}" worker --gateway wss://localhost:19443/uplink --ca-file "$work/ca.pem" --uplinks 1 \
    --admin-port -1 --id w-wss --token-file "$work/worker.token" \
    --target echo=http://127.0.0.1:19071/api/v1/namespaces/bench > "$work/w-wss.log" 2>&1 &
  pids+=($!)
}

down() { for r in $(seq 1 "$runs"); do curl -sf -o /dev/null -H "$auth" -w '%{time_total}\n' "$1"; done | median; }
up() { for r in $(seq 1 "$runs"); do curl -sf -o /dev/null -H "$auth" -T "$work/upload" -w '%{time_total}\n' "$1"; done | median; }
stream="stream?bytes=$bytes&chunk=262144"

start_workers
echo -e "path\tgateway_tls\tdownload_s\tupload_s\tx_direct_down\tx_direct_up"
dd=$(down "http://127.0.0.1:19071/api/v1/namespaces/bench/$stream")
du=$(up "http://127.0.0.1:19071/api/v1/namespaces/bench/objects/bench")
row() { awk -v p="$1" -v t="$2" -v d="$3" -v u="$4" -v dd="$dd" -v du="$du" \
  'BEGIN { printf "%s\t%s\t%.3f\t%.3f\t%.2f\t%.2f\n", p, t, d, u, d/dd, u/du }'; }
row direct - "$dd" "$du"
row ssh-R - "$(down "http://127.0.0.1:19023/api/v1/namespaces/bench/$stream")" \
  "$(up "http://127.0.0.1:19023/api/v1/namespaces/bench/objects/bench")"
for provider in jdk openssl; do
  start_gateway "$provider"
  for w in w-ws w-wss; do
    wait_for -H "$auth" "http://127.0.0.1:19070/relay/$w/echo/echo"
    for i in $(seq 1 "${WARM:-5}"); do # JIT warm-up of both ends, not measured
      curl -sf -o /dev/null -H "$auth" "http://127.0.0.1:19070/relay/$w/echo/$stream"
      curl -sf -o /dev/null -H "$auth" -T "$work/upload" "http://127.0.0.1:19070/relay/$w/echo/objects/bench"
    done
  done
  for w in w-ws w-wss; do
    row "relay-${w#w-}" "$provider" "$(down "http://127.0.0.1:19070/relay/$w/echo/$stream")" \
      "$(up "http://127.0.0.1:19070/relay/$w/echo/objects/bench")"
  done
  kill "$gateway"; wait "$gateway" 2>/dev/null || true
done
