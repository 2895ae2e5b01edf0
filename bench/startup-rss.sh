#!/usr/bin/env bash
# `bin/spector gateway` start-up to a healthy /actuator/health, and its resident memory when idle.
#   bench/startup-rss.sh [runs=5] [candidate ...]
# A candidate is a string of shell assignments for the launcher's environment, e.g.
#   bench/startup-rss.sh 5 'SPECTOR_JVM_DEFAULTS=off SPECTOR_CDS=off JAVA_OPTS="-Xms64m -Xmx256m"' ''
# ('' is out of the box: no flags). LAUNCHER in a candidate names another tree's bin/spector (an
# older build: `git archive COMMIT | tar -x -C /tmp/old`, then build it there). Without
# candidates, out of the box alone. Every candidate
# starts once unmeasured first (the launcher makes its class-data archive there, and the page
# cache warms); the first start's time is printed as first_ms. Then `runs` rounds, the candidates
# interleaved in each, so a noisy neighbour hits them alike; medians and ratios to the first
# candidate at the end. Targets (issue 14, DESIGN.md section 3): under 0.5 s, under 64 MiB.
#
# ms_to_healthy: from just before the launcher is started to the first 200 from /actuator/health
# (polled every 5 ms from bash alone, no curl or sleep processes competing for the 2 CPUs).
# rss: VmRSS of the JVM (the launcher execs it, so it keeps the pid) IDLE_S seconds (default 3)
# after it was healthy, split into anonymous and file-backed pages; cpu_ms: the JVM's user+system
# CPU up to that point. Then first_req_ms: the first request through it, an authorised GET of
# 1 KiB forwarded to the ring's one owner (python3's http.server on 127.0.0.1:19999), and
# served_rss: VmRSS right after it. Environment: PORT (default 19105), IDLE_S.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-5}
shift || true
candidates=("$@")
[ ${#candidates[@]} -eq 0 ] && candidates=("")
port=${PORT:-19105}
idle_s=${IDLE_S:-3}
secret=startup-bench-secret-0123456789-0123456789
hz=$(getconf CLK_TCK)
out=$(mktemp -d)
owner_pid="" pid=""
trap 'for p in $pid $owner_pid; do kill "$p" 2> /dev/null; done; rm -rf "$out"' EXIT

# The launcher builds the jar when it is missing or stale; do that before anything is timed.
"$root/bin/spector" --version > /dev/null
mkdir -p "$out/www/api/v1/namespaces/bench"
head -c 768 /dev/urandom | base64 -w 0 > "$out/www/api/v1/namespaces/bench/1k"
python3 -m http.server 19999 --bind 127.0.0.1 --directory "$out/www" > /dev/null 2>&1 &
owner_pid=$!
printf '%s' "$secret" > "$out/secret"
token=$("$root/bin/spector" token --secret-file "$out/secret" --tenant bench --ttl 3600)

exec {pause_fd}<> <(:)          # read -t on it is a sleep without a process
pause() { read -r -t "$1" -u "$pause_fd" _ || true; }

get() {                         # get PATH [HEADER]: one GET over bash's /dev/tcp; true on a 200
  local fd line=""
  exec {fd}<> "/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%bConnection: close\r\n\r\n' "$1" "${2:+$2\r\n}" >&"$fd"
  IFS= read -r -t 5 -u "$fd" line || true
  while IFS= read -r -t 5 -u "$fd" _; do :; done   # the rest, up to the close
  exec {fd}>&-
  [[ $line == "HTTP/1.1 200"* ]]
}

fail() { cat "$out/gateway.log" >&2; echo "$1" >&2; exit 1; }

# run CANDIDATE: starts the gateway, prints "ms rss_kb anon_kb file_kb cpu_ms first_ms served_kb",
# stops it. Call it without a subshell (its exit is the script's).
run() {
  local t0 t1 t2 t3 status rss anon file cpu served
  ! get /actuator/health 2> /dev/null || { echo "something already answers on port $port" >&2; exit 1; }
  t0=$EPOCHREALTIME
  (
    [ -n "$1" ] && eval "export $1"
    export SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=owner-0=http://127.0.0.1:19999 \
      SPECTOR_SERVER_PORT=$port SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false \
      SPECTOR_SECURITY_JWT_HMAC_SECRET=$secret
    exec "${LAUNCHER:-$root/bin/spector}" gateway
  ) > "$out/gateway.log" 2>&1 &
  pid=$!
  local i
  for ((i = 0; i < 6000; i++)); do   # at most 30 s
    get /actuator/health 2> /dev/null && break
    kill -0 "$pid" 2> /dev/null || fail "the gateway exited"
    pause 0.005
  done
  t1=$EPOCHREALTIME
  [ "$i" -lt 6000 ] || fail "not healthy in 30 s"
  pause "$idle_s"
  status=$(< "/proc/$pid/status") || fail "the gateway exited while idle"
  rss=$(awk '/^VmRSS/{print $2}' <<< "$status")
  anon=$(awk '/^RssAnon/{print $2}' <<< "$status")
  file=$(awk '/^RssFile/{print $2}' <<< "$status")
  cpu=$(awk -v hz="$hz" '{print int(($14 + $15) * 1000 / hz)}' "/proc/$pid/stat")
  t2=$EPOCHREALTIME
  get /api/v1/namespaces/bench/1k "Authorization: Bearer $token" || fail "the first request was not a 200"
  t3=$EPOCHREALTIME
  served=$(awk '/^VmRSS/{print $2}' "/proc/$pid/status")
  kill "$pid"
  wait "$pid" 2> /dev/null || true
  pid=""
  echo "$(( (${t1/./} - ${t0/./}) / 1000 )) $rss $anon $file $cpu $(( (${t3/./} - ${t2/./}) / 1000 )) $served"
}

label() { [ -n "$1" ] && echo "$1" || echo "(out of the box)"; }

for c in "${!candidates[@]}"; do
  run "${candidates[$c]}" > "$out/row"
  read -r ms _ < "$out/row"
  echo "$ms" > "$out/first.$c"
done
mib() { printf '%.1f' "$(bc -l <<< "$1/1024")"; }
printf 'round\tcandidate\tms_to_healthy\trss_mib\tanon_mib\tfile_mib\tcpu_ms\tfirst_req_ms\tserved_rss_mib\n'
for r in $(seq 1 "$runs"); do
  for c in "${!candidates[@]}"; do
    run "${candidates[$c]}" > "$out/row"
    row=$(< "$out/row")
    echo "$row" >> "$out/rows.$c"
    read -r ms rss anon file cpu first served <<< "$row"
    printf '%d\t%d\t%d\t%s\t%s\t%s\t%d\t%d\t%s\n' "$r" "$c" "$ms" "$(mib "$rss")" "$(mib "$anon")" \
      "$(mib "$file")" "$cpu" "$first" "$(mib "$served")"
  done
done
echo
echo "medians of $runs (idle ${idle_s} s; ratios to candidate 0):"
printf 'candidate\tfirst_start_ms\tms\tx\trss_mib\tx\tanon_mib\tfile_mib\tcpu_ms\tfirst_req_ms\tserved_rss_mib\tenvironment\n'
base=""
for c in "${!candidates[@]}"; do
  med=$(python3 -c '
import sys, statistics
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
print(" ".join(str(statistics.median(r[i] for r in rows)) for i in range(7)))' "$out/rows.$c")
  read -r ms rss anon file cpu first served <<< "$med"
  [ -z "$base" ] && base="$ms $rss"
  read -r bms brss <<< "$base"
  printf '%d\t%d\t%.0f\t%.2f\t%s\t%.2f\t%s\t%s\t%.0f\t%.0f\t%s\t%s\n' "$c" "$(< "$out/first.$c")" "$ms" \
    "$(bc -l <<< "$ms/$bms")" "$(mib "$rss")" "$(bc -l <<< "$rss/$brss")" "$(mib "$anon")" "$(mib "$file")" \
    "$cpu" "$first" "$(mib "$served")" "$(label "${candidates[$c]}")"
done
