#!/usr/bin/env python3
"""SnapshotProcess on a chat whose state grows, and the cost of a user function call, measured
on a release binary over stdio (the way a client drives it).

  growth:    one SnapshotProcess of N AI replies, each `@.APPEND("history", "<56 characters>")`,
             on a fresh SQLite data folder: wall time, the server's peak RSS (VmHWM) and the
             database size (with its WAL) afterwards. A run stops early (and says so) when the
             server's RSS passes --rss-cap, to spare the machine.
  functions: SnapshotApply of one text with 200 calls of a trivial user function, against the
             same text with 200 built-in calls: the difference per call is what a user
             function call costs (context, prelude, compile, run, JSON both ways).

Usage: benches/snapshot_growth.py BINARY [--messages 1000,8000,100000] [--rss-cap-mib 3072]
                                         [--skip-growth] [--skip-functions]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


class Server:
    def __init__(self, binary, data_dir):
        self.process = subprocess.Popen(
            [binary, "--data-dir", data_dir, "--log-level", "error"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "HOME": data_dir},
        )
        self.next_id = 0
        self.request({"protocolVersion": "2025-06-18", "capabilities": {},
                      "clientInfo": {"name": "snapshot_growth", "version": "1"}}, "initialize")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.process.stdin.write((json.dumps(message, ensure_ascii=False) + "\n").encode())
        self.process.stdin.flush()

    def request(self, params, method="tools/call"):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.process.stdout.readline()
            if not line:
                return None
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return message

    def call(self, tool, arguments):
        return self.request({"name": tool, "arguments": arguments})

    def status(self, field):
        try:
            with open(f"/proc/{self.process.pid}/status") as status:
                for line in status:
                    if line.startswith(field + ":"):
                        return int(line.split()[1]) * 1024
        except FileNotFoundError:
            pass
        return 0

    def close(self):
        self.process.kill()
        self.process.wait()


def ai(text):
    return {"is_user": False, "swipe_id": 0, "swipes": [text], "swipes_info": [{}]}


def growth(binary, messages, rss_cap):
    with tempfile.TemporaryDirectory() as data_dir:
        server = Server(binary, data_dir)
        chat = [ai(f'@.APPEND("history", "message {index:06} - the hero walks on, a little further on.");')
                for index in range(messages)]
        request_bytes = len(json.dumps(chat, ensure_ascii=False).encode())
        capped = []

        def watch():
            while server.process.poll() is None:
                if server.status("VmRSS") > rss_cap:
                    capped.append(server.status("VmHWM"))
                    server.process.kill()
                    return
                time.sleep(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        started = time.monotonic()
        answer = server.call("SnapshotProcess", {"chatFile": "long", "messages": chat})
        elapsed = time.monotonic() - started
        peak = server.status("VmHWM")
        database = sum(os.path.getsize(os.path.join(data_dir, name))
                       for name in os.listdir(data_dir) if name.startswith("synapse.db"))
        server.close()
        if capped or answer is None:
            print(f"{messages:>7} messages ({request_bytes / 1e6:.2f} MB request): stopped after "
                  f"{elapsed:.1f} s at {max(capped or [peak]) / 2**20:.0f} MiB RSS (cap "
                  f"{rss_cap / 2**20:.0f} MiB); database {database / 1e6:.1f} MB so far")
            return
        result = answer["result"]["structuredContent"]
        print(f"{messages:>7} messages ({request_bytes / 1e6:.2f} MB request): {elapsed:6.1f} s, "
              f"peak RSS {peak / 2**20:7.1f} MiB, database {database / 1e6:8.1f} MB, "
              f"{result['storage']['newBytes'] / messages:7.0f} new bytes per snapshot")


def functions(binary, calls=200, runs=15):
    with tempfile.TemporaryDirectory() as data_dir:
        server = Server(binary, data_dir)
        server.call("FunctionUpsert", {"function": {
            "name": "INC", "type": "active", "pattern": "@\\.INC\\(\\);",
            "executor": "snapshot.n = (snapshot.n || 0) + 1; return snapshot;"}})
        timings = {}
        for label, text in (("built-in", "@.ADD(\"n\", 1);" * calls), ("user function", "@.INC();" * calls)):
            samples = []
            for _ in range(runs):
                started = time.monotonic()
                answer = server.call("SnapshotApply", {"chatFile": "f", "text": text})
                samples.append(time.monotonic() - started)
                assert answer["result"]["structuredContent"]["snapshot"]["n"] == calls, answer
            samples.sort()
            timings[label] = samples[len(samples) // 2]
        server.close()
    per_call = (timings["user function"] - timings["built-in"]) / calls * 1e6
    print(f"SnapshotApply of {calls} calls, median of {runs}: built-in {timings['built-in'] * 1e3:.1f} ms, "
          f"user function {timings['user function'] * 1e3:.1f} ms: {per_call:.0f} µs per user function call")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--messages", default="1000,8000,100000")
    parser.add_argument("--rss-cap-mib", type=int, default=3072)
    parser.add_argument("--skip-growth", action="store_true")
    parser.add_argument("--skip-functions", action="store_true")
    arguments = parser.parse_args()
    print(f"{arguments.binary}, load average {open('/proc/loadavg').read().split()[:3]}")
    if not arguments.skip_functions:
        functions(arguments.binary)
    if not arguments.skip_growth:
        for messages in (int(count) for count in arguments.messages.split(",")):
            growth(arguments.binary, messages, arguments.rss_cap_mib << 20)
            sys.stdout.flush()
    print(f"load average after {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
