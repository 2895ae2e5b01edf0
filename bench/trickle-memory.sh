#!/usr/bin/env bash
# Clients that send their small bodies a byte at a time, against a gateway process: Netty's direct
# memory (spector_netty_direct_memory_used_bytes) with CLIENTS connections that sent their heads
# only, then after each sent BYTES more body bytes one at a time (a segment and a read each; the
# bodies, 60 000 bytes declared, stay unfinished). Kept as the decoder's slices, each held byte held
# its read buffer (about 157 bytes a byte at 7834cb6..34b8001).
#   bench/trickle-memory.sh [JAR] [CLIENTS] [BYTES]   (defaults: this tree's jar, 200, 300)
# Ports 17070-17071 on 127.0.0.1; about 30 s.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
JAR=${1:-$(ls "$root"/spector-cli/target/spector-cli-*-all.jar | head -1)}
CLIENTS=${2:-200}
BYTES=${3:-300}
t=${TMPDIR:-/tmp}
head -c 48 /dev/urandom | base64 | tr -d '\n' > $t/tm-secret
java -jar $JAR owner --node-id owner-0 --port 17071 > $t/tm-owner.log 2>&1 & O=$!
SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=owner-0=http://127.0.0.1:17071 SPECTOR_SERVER_PORT=17070 \
  SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false SPECTOR_SECURITY_JWT_HMAC_SECRET="$(cat $t/tm-secret)" \
  SPECTOR_SERVER_ACCESS_LOG=off java -jar $JAR gateway > $t/tm-gw.log 2>&1 & G=$!
T=$(java -jar $JAR token --secret-file $t/tm-secret --tenant acme --ttl 600)
for i in $(seq 1 100); do curl -sf -o /dev/null http://127.0.0.1:17070/actuator/health && break; sleep 0.1; done
direct() { curl -s http://127.0.0.1:17070/actuator/prometheus | awk '/^spector_netty_direct_memory_used_bytes/ {printf "%.2f MiB", $2/1048576}'; }
python3 - "$CLIENTS" "$BYTES" "$T" <<'PY' &
import socket, sys, time, urllib.request
n, rounds, token = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def direct():
    for line in urllib.request.urlopen("http://127.0.0.1:17070/actuator/prometheus").read().decode().splitlines():
        if line.startswith("spector_netty_direct_memory_used_bytes"):
            return float(line.split()[1]) / 1048576
print("direct memory before: %.2f MiB" % direct(), flush=True)
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", 17070))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(("POST /api/v1/namespaces/ns%d/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Length: 60000\r\n\r\n" % (i, token)).encode())
    socks.append(s)
time.sleep(2)
print("%d heads sent: %.2f MiB" % (n, direct()), flush=True)
for r in range(rounds):
    for s in socks:
        s.send(b"x")
    time.sleep(0.02)
time.sleep(2)
print("%d bytes more on each, one at a time (%d held): %.2f MiB" % (rounds, n * rounds, direct()), flush=True)
for s in socks:
    s.close()
time.sleep(2)
print("the clients gone: %.2f MiB" % direct(), flush=True)
PY
wait $!
kill $G $O; wait 2>/dev/null
