#!/usr/bin/env python3
"""A keep-alive HTTP/1.1 owner that closes a connection idle for IDLE seconds without a word, as
Node (keepAliveTimeout 5 s), uvicorn (5 s) and gunicorn (2 s) do: every request gets FILE with its
Content-Length; writes block with no timeout (only the wait for the next request is timed).

    bench/keepalive-owner.py PORT FILE [IDLE=1.0]
"""
import socket
import sys
import threading

port, path = int(sys.argv[1]), sys.argv[2]
idle = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
body = open(path, 'rb').read()
head = b'HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n' % len(body)


def serve(conn):
    reader = conn.makefile('rb')
    try:
        while True:
            conn.settimeout(idle)
            try:
                line = reader.readline()
            except socket.timeout:
                return  # idle too long: close, unannounced
            if not line:
                return
            while reader.readline() not in (b'\r\n', b'\n', b''):
                pass
            conn.settimeout(None)
            conn.sendall(head)
            conn.sendall(body)
    finally:
        conn.close()


server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(('127.0.0.1', port))
server.listen(64)
while True:
    c, _ = server.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
