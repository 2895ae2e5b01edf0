#!/usr/bin/env bash
# The gateway against direct, nginx, HAProxy and Spring Cloud Gateway in one run, with routing,
# edge auth (an HS256 token on every request) and metrics on. Uses ../shared/bench/compare.sh:
#   bench/gateway-vs-peers.sh [rounds=3] [seconds=10] [connections=32]
# Environment: WARM_S (JVM warm-up per target and size, default 60); JAVA_OPTS for the gateway
# (default -Xms64m -Xmx256m: G1, the ADR's heap); OURS_LAUNCH=spector to start it as `bin/spector
# gateway` does out of the box instead (its JVM defaults and class-data archive, with JAVA_OPTS
# added). The launcher's 8 MiB heap keeps idle memory down but costs a 1 KiB request about a tenth
# more CPU (its young generation of about 3 MiB was collected 15 times a second at 18 000
# requests/s: bench/README.md, "The launcher's heap and the hot path"). Leak detection is off.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SPECTOR_SHARED:-$root/../shared}
work=${BENCH_DIR:-${TMPDIR:-/tmp}/spector-bench}
mkdir -p "$work"

jar=$(ls "$root"/spector-cli/target/spector-cli-*-all.jar 2>/dev/null | head -n 1 || true)
if [ -z "$jar" ]; then
  (cd "$root" && ./mvnw -B package -pl spector-cli -am -DskipTests) >&2
  jar=$(ls "$root"/spector-cli/target/spector-cli-*-all.jar | head -n 1)
fi

secret_file=$work/gateway-secret
[ -f "$secret_file" ] || head -c 48 /dev/urandom | base64 | tr -d '\n' > "$secret_file"
token=$(java -jar "$jar" token --secret-file "$secret_file" --tenant bench --ttl 86400)

export OURS_AUTH="Authorization: Bearer $token"
export OURS_PREFIX=/api/v1/namespaces/bench
# A one-member ring whose member is the benchmark backend; Redis off (L1 and the ring answer).
if [ "${OURS_LAUNCH:-java}" = java ]; then
  launch="java ${JAVA_OPTS:--Xms64m -Xmx256m} -Dio.netty.leakDetection.level=disabled -jar $jar gateway"
else
  # bin/spector execs the JVM, so the process compare.sh measures is the gateway itself.
  launch="JAVA_OPTS='-Dio.netty.leakDetection.level=disabled ${JAVA_OPTS:-}' $root/bin/spector gateway"
fi
export OURS_CMD="exec env SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=bench=http://127.0.0.1:19000 \
SPECTOR_SERVER_PORT=19005 SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false \
SPECTOR_SECURITY_JWT_HMAC_SECRET=$(cat "$secret_file") $launch"
exec "$shared/bench/compare.sh" "$@"
