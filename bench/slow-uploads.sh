#!/usr/bin/env bash
# Slow uploaders against an owner's connection pool, with real clients: a reference owner and a
# gateway process with owner-connections 1, five `curl --limit-rate 4k` uploads of 40 KB (10 s
# each) and two GETs beside them. Before request buffering (request-buffer-bytes) the uploads held
# the pool and the GETs and three uploads were answered 503 owner-pool-exhausted after 2 s.
#   bench/slow-uploads.sh [JAR]   (default: the spector-cli jar this tree builds)
#   CHUNKED=1 bench/slow-uploads.sh [JAR]   the same uploads sent chunked (no Content-Length)
# Ports 17070-17071 on 127.0.0.1; about 15 s.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
JAR=${1:-$(ls "$root"/spector-cli/target/spector-cli-*-all.jar | head -1)}
head -c 48 /dev/urandom | base64 | tr -d '\n' > ${TMPDIR:-/tmp}/su-secret
java -jar $JAR owner --node-id owner-0 --port 17071 > ${TMPDIR:-/tmp}/su-owner.log 2>&1 & O=$!
SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=owner-0=http://127.0.0.1:17071 SPECTOR_SERVER_PORT=17070 \
  SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false SPECTOR_SECURITY_JWT_HMAC_SECRET="$(cat ${TMPDIR:-/tmp}/su-secret)" \
  SPECTOR_ROUTING_GATEWAY_OWNER_CONNECTIONS=1 SPECTOR_SERVER_ACCESS_LOG=off java -jar $JAR gateway > ${TMPDIR:-/tmp}/su-gw.log 2>&1 & G=$!
T=$(java -jar $JAR token --secret-file ${TMPDIR:-/tmp}/su-secret --tenant acme --ttl 600)
for i in $(seq 1 100); do curl -sf -o /dev/null http://127.0.0.1:17070/actuator/health && break; sleep 0.1; done
head -c 40000 /dev/urandom > ${TMPDIR:-/tmp}/su.bin
for i in 1 2 3 4 5; do curl -s -o ${TMPDIR:-/tmp}/su$i.out -w "upload $i %{http_code} %{time_total}s\n" --limit-rate 4k \
  -H "Authorization: Bearer $T" -H 'Content-Type: application/octet-stream' ${CHUNKED:+-H 'Transfer-Encoding: chunked'} --data-binary @${TMPDIR:-/tmp}/su.bin \
  http://127.0.0.1:17070/api/v1/namespaces/orders/echo > ${TMPDIR:-/tmp}/su$i.st & done
sleep 1
for i in 1 2; do curl -s -o ${TMPDIR:-/tmp}/su-get$i.out -w "GET beside them: %{http_code} %{time_total}s\n" -H "Authorization: Bearer $T" http://127.0.0.1:17070/api/v1/namespaces/orders/echo; done
wait $(jobs -p | grep -v -e "^$O\$" -e "^$G\$") 2>/dev/null
sleep 11; cat ${TMPDIR:-/tmp}/su?.st; grep -ho '"bodyBytes":[0-9]*' ${TMPDIR:-/tmp}/su?.out | sort | uniq -c; head -c 160 ${TMPDIR:-/tmp}/su-get1.out; echo
kill $G $O; wait 2>/dev/null
