#!/usr/bin/env bash
# A real browser against the gateway: headless Chromium loads a page from another origin (a small
# page server on :19311) that calls a gateway (:19310, CORS on for that origin, the token in the
# Authorization header, or in access_token where a browser cannot send a header) in front of one
# reference owner (:19312), and reports what the page could do:
#   echo              fetch with a preflight (Authorization): status, body, X-Request-Id readable
#   problemRequestId  a 401 problem read by the page, its requestId equal to the readable header
#   unauthenticated   the 401's type and code
#   command           POST JSON twice with one Idempotency-Key
#   object            PUT 3 MiB + 7 bytes, GET it back, SHA-256 equal
#   tooLarge          PUT 11 MiB: the 413 problem readable (an early answer, CORS on it)
#   stream            a 5 000 000-byte chunked download read through a ReadableStream, every byte checked
#   eventSource       two events of /api/v1/events (EventSource cannot send headers: access_token)
#   webSocket         an echo through the upgrade of /api/v1/namespaces/acme/ws
#   bench/browser-check.sh            (needs chromium: apt-get install -y chromium)
# Prints the page's JSON and one line per check, OK or FAILED; exits 1 when any failed.
set -euo pipefail
root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
command -v chromium >/dev/null || { echo "needs chromium (Debian: apt-get install -y chromium)"; exit 2; }
source "$root/bench/processes.sh"
GW=19310 PAGE=19311 OWNER=19312

credentials
token=${auth#Authorization: Bearer }
start_owner $OWNER
env SPECTOR_CELL_ROLE=gateway SPECTOR_CELL_RING_MEMBERS=owner-0=http://127.0.0.1:$OWNER \
  SPECTOR_SERVER_PORT=$GW SPECTOR_SERVER_HOST=127.0.0.1 SPECTOR_ROUTING_REDIS_ENABLED=false SPECTOR_SERVER_PEER_PORT=-1 \
  SPECTOR_SECURITY_JWT_HMAC_SECRET="$(cat "$work/secret")" SPECTOR_SECURITY_JWT_ALLOW_QUERY_TOKEN=true \
  SPECTOR_CORS_ALLOWED_ORIGINS=http://127.0.0.1:$PAGE SPECTOR_SERVER_ACCESS_LOG="$work/access.log" \
  "${java[@]}" gateway > "$work/gateway.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$GW/actuator/health"

cp "$root/spector-gateway/src/test/resources/browser/page.html" "$work/page.html" # the page BrowserTest loads too
python3 - "$work" $PAGE > "$work/page-server.log" 2>&1 <<'PY' &
import http.server, os, sys
work, port = sys.argv[1], int(sys.argv[2])
class Page(http.server.SimpleHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get('Content-Length', 0)))
        with open(os.path.join(work, 'result.json'), 'wb') as f: f.write(body)
        self.send_response(204); self.end_headers()
    def log_message(self, *a): pass
os.chdir(work); http.server.ThreadingHTTPServer(('127.0.0.1', port), Page).serve_forever()
PY
pids+=($!)
wait_for "http://127.0.0.1:$PAGE/page.html"

timeout 90 chromium --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
  --user-data-dir="$work/chromium" "http://127.0.0.1:$PAGE/page.html?g=$GW&t=$token" > "$work/chromium.log" 2>&1 &
browser=$!
for i in $(seq 1 600); do [ -s "$work/result.json" ] && break; sleep 0.1; done
pkill -P $browser 2>/dev/null || true; kill $browser 2>/dev/null || true
[ -s "$work/result.json" ] || { echo "the page reported nothing within 60 s"; tail -20 "$work/chromium.log"; exit 1; }
python3 - "$work/result.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(json.dumps(r, indent=1))
want = {
  'echo': lambda v: v['status'] == 200 and v['node'] == 'owner-0' and v['requestId'] and v['spectorNode'] == 'owner-0',
  'problemRequestId': lambda v: v['status'] == 401 and v['same'] and v['header'],
  'unauthenticated': lambda v: v['status'] == 401 and v['type'] == 'application/problem+json' and v['code'] == 'UNAUTHENTICATED',
  'command': lambda v: len(v) == 2 and v[0].startswith('200 - ') and v[1].startswith('200 true '),
  'object': lambda v: v['put'] in (200, 201) and v['get'] == 200 and v['length'] == 3 * 1024 * 1024 + 7 and v['same'],
  'tooLarge': lambda v: v['status'] == 413 and v['code'] == 'PAYLOAD_TOO_LARGE',
  'stream': lambda v: v['status'] == 200 and v['bytes'] == 5000000 and v['bad'] == 0,
  'eventSource': lambda v: len(v['events']) == 2 and not v.get('timeout') and all(e.isdigit() for e in v['events']),
  'webSocket': lambda v: isinstance(v, dict) and v['echo'] == 'hello through the gateway',
}
failed = 0
for name, ok in want.items():
    v = r.get(name)
    try: good = bool(ok(v))
    except Exception: good = False
    failed += not good
    print('%-17s %s' % (name, 'OK' if good else 'FAILED'))
sys.exit(1 if failed else 0)
PY
