#!/usr/bin/env bash
# Wall time and CPU per thread group of N 200 MiB transfers through `bin/spector demo` over uplink
# v2, after WARM rounds of JIT warm-up: what a relay costs the gateway and worker event loops
# (user and system time), beside the reference upstream's own. Give another checkout's root to
# compare two builds in one session (issue 12's "one thread per relay" numbers in bench/README).
#   [WARM=20] bench/relay-cpu.sh [down|up|direct|directup] [n=10] [root=this checkout]
# down/up: through /relay/demo-worker/echo; direct/directup: straight to the upstream on :7074.
set -euo pipefail
mode=${1:-down}
n=${2:-10}
root=${3:-$(cd "$(dirname "$0")/.." && pwd)}
mib=200
state=$(mktemp -d)
demo=
trap '[ -n "$demo" ] && { kill "$demo" 2>/dev/null || true; wait "$demo" 2>/dev/null || true; }; rm -rf "$state"' EXIT
head -c $((mib * 1024 * 1024)) /dev/urandom > "$state/upload"
"$root/bin/spector" demo --state-dir "$state" --uplink-protocol v2 > "$state/demo.log" 2>&1 &
demo=$!
for i in $(seq 1 300); do [ -f "$state/token" ] && curl -sf -o /dev/null http://127.0.0.1:7070/actuator/health && break; sleep 0.1; done
auth="Authorization: Bearer $(cat "$state/token")"
for i in $(seq 1 100); do curl -sf -o /dev/null -H "$auth" http://127.0.0.1:7070/relay/demo-worker/echo/echo && break; sleep 0.1; done
pid=$(pgrep -f 'spector-cli.*demo' | head -1)
relay=http://127.0.0.1:7070/relay/demo-worker/echo
direct=http://127.0.0.1:7074/api/v1/namespaces/demo
stream="stream?bytes=$((mib * 1024 * 1024))&chunk=262144"
one() { # $1: mode
  case $1 in
    down) curl -sf --max-time 60 -o /dev/null -H "$auth" -w '%{time_total}\n' "$relay/$stream" ;;
    up) curl -sf --max-time 60 -o /dev/null -H "$auth" -T "$state/upload" -w '%{time_total}\n' "$relay/objects/bench" ;;
    direct) curl -sf --max-time 60 -o /dev/null -H "$auth" -w '%{time_total}\n' "$direct/$stream" ;;
    directup) curl -sf --max-time 60 -o /dev/null -H "$auth" -T "$state/upload" -w '%{time_total}\n' "$direct/objects/bench" ;;
  esac
}
for w in $(seq 1 "${WARM:-20}"); do one "$mode" > /dev/null; done
# user and system ticks per thread group (names without their -N-M suffix)
snap() {
  python3 - "$pid" <<'PY'
import collections, os, re, sys
pid = sys.argv[1]
u, s = collections.Counter(), collections.Counter()
for t in os.listdir(f"/proc/{pid}/task"):
    try:
        st = open(f"/proc/{pid}/task/{t}/stat").read()
    except OSError:
        continue
    name = re.sub(r"-\d+$", "", st[st.index("(") + 1:st.rindex(")")]).replace(" ", "_")
    f = st[st.rindex(")") + 2:].split()
    u[name] += int(f[11]); s[name] += int(f[12])
for k in sorted(u):
    print(k, u[k], s[k])
PY
}
snap > "$state/before"
t0=$(date +%s.%N)
for r in $(seq 1 "$n"); do one "$mode"; done > "$state/times"
t1=$(date +%s.%N)
snap > "$state/after"
tick=$(getconf CLK_TCK)
echo "$mode: $n x $mib MiB in $(echo "$t1 - $t0" | bc) s, median $(sort -n "$state/times" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') s each ($root)"
join "$state/before" "$state/after" | awk -v tick="$tick" -v mib=$((n * mib)) \
  '{du=($4-$2)*1000/tick; ds=($5-$3)*1000/tick; if (du+ds>0) printf "  %-28s user %6d ms  sys %6d ms  %.2f ms/MiB\n", $1, du, ds, (du+ds)/mib}' \
  | sort -k8 -g -r | head -8
