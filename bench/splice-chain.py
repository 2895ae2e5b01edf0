#!/usr/bin/env python3
"""How much a relay's download could gain from splice(2), before building it (issue 12).

A 200 MiB download through the uplink relay crosses three loopback sockets (upstream -> worker ->
gateway -> client) against direct's one, and the relay's event loops spend three quarters of their
time in the kernel copying (bench/README, "The 200 MiB comparison on a quiet machine"). This
measures the ceiling of the one way to fewer copies, with the relay's framing kept: two tiny hops
in Python stand in for the worker and the gateway, and each moves the body either through its own
memory (copy: recv into a buffer, send it on, as the relay does now) or through a pipe in the
kernel (splice: the bytes never enter the process):

  curl --HTTP--> gateway hop --frames--> worker hop --HTTP--> nginx (a 200 MiB file, sendfile)

The worker hop frames the body as the relay does: a header (14 bytes here: a WebSocket header and
a v2 DATA header) before every slice of at most SLICE bytes. Spliced, each slice is moved from the
upstream socket into a pipe first (whatever is there, up to the slice), then its header is written
with the exact length, then the pipe is spliced into the link: no slice ever waits for upstream
bytes while it holds the link. The gateway hop reads each header exactly, then splices that many
bytes from the link to the client through its pipe. Pipes keep Linux's default size (64 KiB): Java
17 cannot call fcntl(F_SETPIPE_SZ).

  bench/splice-chain.py [rounds=5] [size_mib=200] [slice_kib=16] [upstream_url]
  env CHAIN_HEADER="Authorization: Bearer ..."   a header for every download and upstream request
  env CHAIN_EXTRA="relay-v2=http://127.0.0.1:7070/relay/..."   more paths to time in the same rounds

Without upstream_url the upstream is nginx sending a size_mib file; with it (e.g. the demo's
reference upstream, as bench/relay-vs-ssh.sh downloads it) "direct" is that URL, and size_mib is
unused. Prints the median seconds per download of each path, its ratio to direct, and the two
hops' CPU per download. Needs curl (and nginx without a URL); everything on 127.0.0.1, bounded by
the rounds.
"""
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

HEADER = struct.Struct(">HIQ")  # 14 bytes: the WebSocket and v2 headers' size, not their layout
BUF = 64 * 1024
AUTH = (os.environ.get("CHAIN_HEADER", "") + "\r\n").encode() if os.environ.get("CHAIN_HEADER") else b""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def recv_exact(sock, n):
    out = bytearray()
    while len(out) < n:
        b = sock.recv(n - len(out))
        if not b:
            raise EOFError("closed mid-frame")
        out += b
    return bytes(out)


def splice_all(src, dst, n):
    while n > 0:
        m = os.splice(src, dst, n)
        if m == 0:
            raise EOFError("splice: source closed")
        n -= m


def sendmsg_all(sock, parts):
    """Sends every byte of PARTS (one writev when the socket takes it all), as Netty's writev does."""
    parts = [memoryview(p) for p in parts]
    while parts:
        sent = sock.sendmsg(parts)
        while parts and sent >= len(parts[0]):
            sent -= len(parts[0])
            parts.pop(0)
        if parts and sent:
            parts[0] = parts[0][sent:]


def read_head(sock):
    """Reads an HTTP head exactly (peek, then take just its bytes): the body stays in the socket."""
    while True:
        peek = sock.recv(8192, socket.MSG_PEEK)
        end = peek.find(b"\r\n\r\n")
        if end >= 0:
            return recv_exact(sock, end + 4)
        if not peek:
            raise EOFError("closed in the head")


def worker_hop(link, upstream, mode, slice_bytes):
    """Relays the upstream's whole answer (head and body, as it framed them) in frames, then END."""
    host, port, target = upstream
    up = socket.create_connection((host, port))
    up.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s\r\n" % (target.encode(), AUTH))
    if mode == "splice":
        r, w = os.pipe()
        try:
            while True:
                n = os.splice(up.fileno(), w, slice_bytes)  # what is there, up to a slice
                if n == 0:
                    break
                link.sendall(HEADER.pack(0x82, n, 1))
                splice_all(r, link.fileno(), n)
        finally:
            os.close(r)
            os.close(w)
    else:
        buf = bytearray(BUF)
        view = memoryview(buf)
        while True:
            got = up.recv_into(buf)
            if got == 0:
                break
            parts = []
            for at in range(0, got, slice_bytes):
                n = min(slice_bytes, got - at)
                parts += [HEADER.pack(0x82, n, 1), view[at : at + n]]
            sendmsg_all(link, parts)
    link.sendall(HEADER.pack(0x82, 0, 1))  # END
    up.close()


def gateway_hop(client, link, mode):
    """Writes every frame's payload to the client, unchanged, until END."""
    if mode == "splice":
        r, w = os.pipe()
        try:
            while True:
                _, n, _ = HEADER.unpack(recv_exact(link, HEADER.size))
                if n == 0:
                    return
                moved = 0
                while moved < n:
                    m = os.splice(link.fileno(), w, n - moved)
                    if m == 0:
                        raise EOFError("link closed")
                    splice_all(r, client.fileno(), m)
                    moved += m
        finally:
            os.close(r)
            os.close(w)
    buf = bytearray(4 * BUF)
    view = memoryview(buf)
    have = 0
    need = None  # payload bytes left of the current frame
    while True:
        got = link.recv_into(view[have:])
        if got == 0:
            raise EOFError("link closed")
        have += got
        at = 0
        out = []
        while True:
            if need is None:
                if have - at < HEADER.size:
                    break
                _, need, _ = HEADER.unpack_from(buf, at)
                at += HEADER.size
                if need == 0:
                    if out:
                        sendmsg_all(client, out)
                    return
            take = min(need, have - at)
            if take == 0:
                break
            out.append(view[at : at + take])
            at += take
            need -= take
            if need == 0:
                need = None
        if out:
            sendmsg_all(client, out)
        buf[: have - at] = buf[at:have]  # the start of a header, kept
        have -= at


def group_cpu(pgid):
    """User + system seconds of every process in group PGID (a chain's two hops); 0 for none."""
    if pgid is None:
        return 0.0
    ticks = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # field 5, pgrp
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def serve(listener, handler):
    def loop():
        while True:
            try:
                c, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handler, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    size = (int(sys.argv[2]) if len(sys.argv) > 2 else 200) * 1024 * 1024
    slice_bytes = (int(sys.argv[3]) if len(sys.argv) > 3 else 16) * 1024
    url = sys.argv[4] if len(sys.argv) > 4 else None
    procs = []
    nginx = None
    try:
        if url is None:
            nginx, port = start_nginx(size)
            upstream = ("127.0.0.1", port, "/big")
        else:
            upstream = parse(url)
        paths = {"direct": upstream}
        for worker_mode in ("copy", "splice"):
            for gateway_mode in ("copy", "splice"):
                port = free_port()
                # each hop in its own process, as the worker and the gateway are
                pid = os.fork()
                if pid == 0:
                    os.setsid()  # the chain's two hops in one group, killed together
                    run_chain(port, upstream, worker_mode, gateway_mode, slice_bytes)
                    os._exit(0)
                procs.append(pid)
                paths["worker %s, gateway %s" % (worker_mode, gateway_mode)] = ("127.0.0.1", port, upstream[2])
        groups = dict(zip(list(paths)[1:], procs))
        for extra in filter(None, os.environ.get("CHAIN_EXTRA", "").split(",")):
            name, _, extra_url = extra.partition("=")  # e.g. the product's relay, timed alongside
            paths[name] = parse(extra_url)
        times = {p: [] for p in paths}
        cpu = {p: [] for p in paths}
        expected = None
        for name, target in paths.items():  # warm-up, and each chain is up and whole
            got = download(target)[1]
            expected = expected or got
            if got != expected:
                raise SystemExit("%s: %d bytes, direct %d" % (name, got, expected))
        for _ in range(rounds):
            for name, target in paths.items():
                before = group_cpu(groups.get(name))
                took, got = download(target)
                if got != expected:
                    raise SystemExit("%s: %d bytes, direct %d" % (name, got, expected))
                times[name].append(took)
                cpu[name].append(group_cpu(groups.get(name)) - before)
        direct = statistics.median(times["direct"])
        print(
            "%s, %.1f MiB, slice %d KiB, %d rounds (median s, x direct)"
            % (url or "nginx, a file", expected / 1048576, slice_bytes >> 10, rounds)
        )
        for name, t in times.items():
            m = statistics.median(t)
            c = statistics.median(cpu[name])
            print(
                "  %-30s %.3f s  %.2fx  hops' CPU %.3f s  (%s)"
                % (name, m, m / direct, c, " ".join("%.3f" % x for x in t))
            )
    finally:
        for pid in procs:
            os.killpg(pid, 9)
        if nginx is not None:
            nginx.terminate()
            nginx.wait(timeout=10)


def parse(url):
    """Returns (host, port, path and query) of an http:// URL."""
    hostport, _, path = url.removeprefix("http://").partition("/")
    host, _, port = hostport.partition(":")
    return host, int(port), "/" + path


def start_nginx(size):
    """Starts nginx serving a SIZE-byte file as /big on a free port; returns it and the port."""
    work = tempfile.mkdtemp(prefix="splice-chain-")
    os.chmod(work, 0o755)  # nginx's workers may run as another user
    with open(os.path.join(work, "big"), "wb") as f:
        f.truncate(size)  # a sparse file: nginx sends it from the page cache
    os.chmod(os.path.join(work, "big"), 0o644)
    port = free_port()
    conf = os.path.join(work, "nginx.conf")
    with open(conf, "w") as f:
        f.write(
            "daemon off; worker_processes 1; pid %s/nginx.pid; error_log %s/error.log;\n"
            "events { worker_connections 64; }\n"
            "http { access_log off; sendfile on; server { listen 127.0.0.1:%d; root %s; } }\n"
            % (work, work, port, work)
        )
    nginx = subprocess.Popen(["nginx", "-c", conf, "-p", work])
    deadline = time.time() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return nginx, port
        except OSError:
            if time.time() > deadline:
                nginx.kill()
                raise
            time.sleep(0.05)


def run_chain(port, upstream, worker_mode, gateway_mode, slice_bytes):
    """Forks the worker hop; this process is the gateway hop on PORT."""
    worker_port = free_port()
    worker_listener = socket.create_server(("127.0.0.1", worker_port))
    if os.fork() == 0:
        serve(worker_listener, lambda link: worker_hop(link, upstream, worker_mode, slice_bytes))
        threading.Event().wait()
    worker_listener.close()
    listener = socket.create_server(("127.0.0.1", port))

    def on_client(c):
        read_head(c)
        link = socket.create_connection(("127.0.0.1", worker_port))
        gateway_hop(c, link, gateway_mode)
        link.close()
        c.close()

    serve(listener, on_client)
    threading.Event().wait()


def download(target):
    """Returns the seconds and the bytes of one curl download of TARGET (host, port, path)."""
    cmd = ["curl", "-s", "-o", "/dev/null", "-w", "%{time_total} %{size_download}"]
    if os.environ.get("CHAIN_HEADER"):
        cmd += ["-H", os.environ["CHAIN_HEADER"]]
    out = subprocess.run(
        cmd + ["http://%s:%d%s" % target], capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    return float(out[0]), int(out[1])


if __name__ == "__main__":
    main()
