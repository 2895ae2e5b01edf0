# Sourced by the whole-process benchmarks (relay-tls.sh, relay-peer-hop.sh): the CLI jar (built
# when missing), `java` to run it, a temp dir and the processes to stop on exit, and the helpers
# `wait_for URL...` (curl until it answers, at most 30 s) and `median` (of numbers on stdin).
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
