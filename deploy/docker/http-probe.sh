#!/bin/bash
# http-probe.sh PATH [PORT]: exits 0 when GET http://127.0.0.1:PORT/PATH answers 200, 1 otherwise.
# The images' HEALTHCHECK uses it; it needs only bash (its /dev/tcp), since the JRE base image is
# not promised to carry curl or wget. PORT defaults to the gateway's admin port when one is set
# (SPECTOR_SERVER_ADMIN_PORT above 0: health on a thread of its own, never behind traffic), else to
# SPECTOR_SERVER_PORT, else 7070.
set -u
# A server that resets before the request is written makes this exit 1, not 141 (bash dies of
# SIGPIPE by default): Docker's HEALTHCHECK defines 0 and 1 only, and "141" reads as a crash.
trap '' PIPE
path="${1:?usage: http-probe.sh PATH [PORT]}"
port="${SPECTOR_SERVER_PORT:-7070}"
case "${SPECTOR_SERVER_ADMIN_PORT:-}" in
  "" | -* | 0) ;;
  *) port="$SPECTOR_SERVER_ADMIN_PORT" ;;
esac
port="${2:-$port}"
{ exec 3<>"/dev/tcp/127.0.0.1/${port}"; } 2>/dev/null || exit 1
printf 'GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' "$path" >&3 2>/dev/null || exit 1
IFS= read -r -t 5 status <&3 2>/dev/null || exit 1
exec 3<&-
case "$status" in
  "HTTP/1."?" 200 "*) exit 0 ;;
  *) exit 1 ;;
esac
