#!/usr/bin/env python3
"""Writes link/startup-order.txt: the functions a fresh server runs from start to its first
answers, which the release build places first in the binary (build.rs passes the file to the
linker). An idle server then maps few pages of code: the kernel maps code 64 KB around each page
first touched, and start-up code scattered over 25 MB of text kept 18 MB of it resident.

    SYNAPSE_KEEP_SYMBOLS=1 cargo build --profile ci && benches/startup_order.py target/ci/synapse-mcp

The `ci` build with its symbol table names every function as the release build does (release
binaries are stripped by build.rs). Run it again after a dependency or toolchain change and after
larger code changes (symbol names carry hashes that move with them; names no longer in the binary
are ignored, so a stale file only orders less).
"""

import os
import re
import sys
import tempfile
from pathlib import Path

from stdio_client import Server

REPOSITORY = Path(__file__).resolve().parent.parent


def session(server: Path, output: Path, home: Path) -> None:
    """Start-up, the lists a host reads first, one call of each common kind, then the end."""
    environment = {"HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "PATH": os.environ["PATH"]}
    command = [
        "valgrind", "--tool=callgrind", "--demangle=no", "--dump-instr=yes",
        f"--callgrind-out-file={output}", str(server), "--store", "memory",
    ]
    process = Server(command, environment)
    process.initialize("startup-order")
    process.ask("tools/list", {})
    process.ask("prompts/list", {})
    process.ask("resources/list", {})
    call = lambda name, arguments: {"name": name, "arguments": arguments}  # noqa: E731
    process.ask("tools/call", call("WriteVar", {"name": "note", "value": "x" * 1024}))
    process.ask("tools/call", call("ReadVar", {"name": "note"}))
    process.ask("tools/call", call("SkillSearch", {"query": "write a skill"}))
    process.close()


def functions(profile: Path, binary_name: str) -> list[str]:
    """The binary's functions that ran, in the order callgrind first lists them."""
    objects: dict[str, str] = {}
    names: dict[str, str] = {}
    current_object = current_function = None
    found: dict[str, None] = {}
    for line in profile.read_text(errors="replace").splitlines():
        if match := re.match(r"(c?)(ob|fn)=\((\d+)\)\s*(.*)", line):
            calls, kind, number, name = match.groups()
            if name:
                (objects if kind == "ob" else names)[number] = name
            if not calls:
                if kind == "ob":
                    current_object = number
                else:
                    current_function = number
        elif line[:1] in "0123456789+-*" and objects.get(current_object, "").endswith(binary_name):
            name = names.get(current_function, "").split("'")[0]
            if name and not name.startswith("0x"):
                found[name] = None
    return list(found)


def main() -> int:
    server = Path(sys.argv[1]).resolve()
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "callgrind.out"
        session(server, output, Path(folder) / "home")
        ordered = functions(output, server.name)
    target = REPOSITORY / "link" / "startup-order.txt"
    header = (
        "# Written by benches/startup_order.py: the functions a fresh server runs first, which\n"
        "# build.rs has the linker place first in release builds (idle memory: see the script).\n"
    )
    target.write_text(header + "\n".join(ordered) + "\n", encoding="utf-8")
    print(f"{len(ordered)} functions in {target.relative_to(REPOSITORY)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
