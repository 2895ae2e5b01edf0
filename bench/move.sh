#!/usr/bin/env bash
# A planned move with zero client errors (issue 13), one run: two gateway processes, three
# reference owners and one redis-server on loopback (MoveProcessesTest's harness); a client loop
# writes objects to one namespace through both gateways (about 50 writes/s each) while the
# namespace moves to another owner (a warm-up move of another namespace first). Prints the client
# errors, the acknowledged writes and how many read back from the new owner with their hash, the
# slowest request that overlapped the move, and the hand-off time the old owner measured.
#   bench/move.sh          the second move (a first one warms both gateways and the owners)
#   bench/move.sh cold     the first move, in fresh JVMs
set -euo pipefail
root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
command -v redis-server >/dev/null || { echo "needs redis-server" >&2; exit 1; }
report=$(mktemp "${TMPDIR:-/tmp}/spector-move.XXXXXX")
trap 'rm -f "$report"' EXIT
(cd "$root" && ./mvnw -B -o -q -pl spector-gateway -am verify -Dtest=MoveProcessesTest \
  -Dsurefire.failIfNoSpecifiedTests=false -Dsurefire.rerunFailingTestsCount=0 \
  -Dspector.move.report="$report" -Dspector.move.cold="$([ "${1:-}" = cold ] && echo true || echo false)") || echo "(the run's assertions failed; its numbers follow)" >&2
[ -s "$report" ] || { echo "no numbers: the run did not get as far as the move" >&2; exit 1; }
head -1 "$report" | tr ' ' '\n'
tail -n +2 "$report"   # the slowest requests, with their access-log lines
