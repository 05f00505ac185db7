#!/usr/bin/env python3
"""The idle server's memory: a fresh start on the embedded defaults (a new HOME each time, so
the default SQLite store is created), `initialize`, `tools/list`, then 1.5 s of nothing; then
VmRSS and its anonymous and file-backed parts from /proc. Prints each start and the medians.

    benches/idle_memory.py target/release/synapse-mcp [STARTS] [--budget MIB]
    benches/idle_memory.py --command node …/server-everything/dist/index.js stdio
                                  (another server, 3 starts: the peer beside ours)

Memory, unlike time, does not depend on how busy the machine is, so this can run beside a build.
With `--budget`, a median VmRSS above it fails (exit 1): `.ci/run` holds the `ci` build to one,
which catches a stale link/startup-order.txt (start-up code scattered again: 21.5 MiB against
13.6 fresh, 2026-12-07); regenerate it as benches/startup_order.py says.
"""

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from stdio_client import Server

FIELDS = ("VmRSS", "RssAnon", "RssFile", "VmHWM")


def idle(command: list[str]) -> dict[str, int]:
    """One start: the fields of FIELDS in KiB, read after the server has idled."""
    with tempfile.TemporaryDirectory() as home:
        environment = {"HOME": home, "XDG_DATA_HOME": f"{home}/data", "PATH": os.environ["PATH"]}
        process = Server(command, environment)
        process.initialize("idle-memory")
        process.ask("tools/list", {})
        time.sleep(1.5)
        status = Path(f"/proc/{process.process.pid}/status").read_text()
        process.close()
    figures = {}
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name in FIELDS:
            figures[name] = int(value.split()[0])
    return figures


def main() -> int:
    arguments = sys.argv[1:]
    budget = None
    if "--budget" in arguments:
        at = arguments.index("--budget")
        budget = float(arguments[at + 1])
        del arguments[at:at + 2]
    if arguments[0] == "--command":
        command, starts = arguments[1:], 3
    else:
        command = [str(Path(arguments[0]).resolve())]
        starts = int(arguments[1]) if len(arguments) > 1 else 5
    runs = [idle(command) for _ in range(starts)]
    for run in runs:
        print("  ".join(f"{name} {run[name]:,} KiB" for name in FIELDS))
    medians = {name: statistics.median(run[name] for run in runs) for name in FIELDS}
    print("median: " + "  ".join(f"{name} {medians[name] / 1024:.1f} MiB" for name in FIELDS))
    if budget is not None and medians["VmRSS"] / 1024 > budget:
        print(
            f"idle VmRSS {medians['VmRSS'] / 1024:.1f} MiB is over its budget of {budget} MiB: "
            "if RssFile grew, regenerate link/startup-order.txt (benches/startup_order.py)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
