# Sourced by the whole-process benchmarks (relay-tls.sh, relay-peer-hop.sh): the CLI jar (built
# when missing), `java` to run it, a temp dir and the processes to stop on exit, and the helpers
# `wait_for URL...` (curl until it answers, at most 30 s), `median` (of numbers on stdin),
# `credentials` and `start_owner PORT`.
# Expects `root`; a caller with more to stop sets `on_exit` (a command) before sourcing.
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  ${on_exit:-true} >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

jar=$(ls "$root"/spector-cli/target/spector-cli-*-all.jar 2>/dev/null | head -n 1 || true)
if [ -z "$jar" ]; then
  (cd "$root" && ./mvnw -B -q package -pl spector-cli -am -DskipTests) >&2
  jar=$(ls "$root"/spector-cli/target/spector-cli-*-all.jar | head -n 1)
fi
java=(java -Xms64m -Xmx256m -Dio.netty.leakDetection.level=disabled -jar "$jar")

wait_for() { for i in $(seq 1 300); do curl -sf -o /dev/null "$@" && return 0; sleep 0.1; done; echo "not up: $*" >&2; return 1; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Makes the cell's HMAC secret ($work/secret), a tenant token in $auth, and a worker token
# ($work/worker.token) with its SHA-256 in $hash, as spector.uplink.tokens wants it.
credentials() {
  head -c 48 /dev/urandom | base64 | tr -d '\n' > "$work/secret"
  auth="Authorization: Bearer $("${java[@]}" token --secret-file "$work/secret" --tenant bench --ttl 3600)"
  head -c 32 /dev/urandom | base64 | tr -d '\n=/+' > "$work/worker.token"
  hash=$(sha256sum < "$work/worker.token" | cut -d' ' -f1)
}

# Starts a reference owner alone in its ring on 127.0.0.1:$1, the relays' upstream.
start_owner() {
  "${java[@]}" owner --node-id owner-0 --port "$1" --host 127.0.0.1 --members owner-0 > "$work/owner.log" 2>&1 &
  pids+=($!)
  wait_for "http://127.0.0.1:$1/health"
}
