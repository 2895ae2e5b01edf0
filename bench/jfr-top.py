#!/usr/bin/env python3
"""Top frames of a JFR recording's execution samples (issue 14's profiles in bench/README.md).

    bench/jfr-top.py RECORDING.jfr [self_rows=30] [inclusive_rows=0]

Prints the share of jdk.ExecutionSample events per sampled thread, per top frame (self) and, when
asked, per method anywhere on the stack (inclusive, each method once per sample). Needs `jfr` (the
JDK's) on PATH.
"""
import collections
import json
import subprocess
import sys

recording = sys.argv[1]
self_rows = int(sys.argv[2]) if len(sys.argv) > 2 else 30
inclusive_rows = int(sys.argv[3]) if len(sys.argv) > 3 else 0
out = subprocess.run(
    ["jfr", "print", "--stack-depth", "64", "--json", "--events", "jdk.ExecutionSample", recording],
    capture_output=True, text=True, check=True).stdout
events = json.loads(out)["recording"]["events"]
own, anywhere, threads = collections.Counter(), collections.Counter(), collections.Counter()
n = 0
for e in events:
    stack = e["values"]["stackTrace"]
    if not stack:
        continue
    n += 1
    thread = e["values"].get("sampledThread") or {}
    threads[thread.get("javaName", "?")] += 1
    names = [f["method"]["type"]["name"].split("/")[-1] + "." + f["method"]["name"] for f in stack["frames"]]
    own[names[0]] += 1
    for m in set(names):
        anywhere[m] += 1
print(f"samples {n}")
print("threads: " + ", ".join(f"{t} {c * 100 / n:.1f}%" for t, c in threads.most_common(6)))
print("--- self (top frame) ---")
for m, c in own.most_common(self_rows):
    print(f"{c * 100 / n:5.1f}%  {m}")
if inclusive_rows:
    print("--- inclusive ---")
    for m, c in anywhere.most_common(inclusive_rows):
        print(f"{c * 100 / n:5.1f}%  {m}")
