#!/usr/bin/env bash
# Side-by-side stdio figures of synapse-mcp and the peers a user would pick instead, in one run on
# one machine, with the same client (examples/load_driver.rs: plain JSON-RPC over pipes):
#   - the official TypeScript "everything" server (npm @modelcontextprotocol/server-everything),
#     tool `echo`;
#   - a minimal Python server on PyPI `mcp` (MCPServer, FastMCP's name in mcp 2.x) with one echo
#     tool, written into the temporary folder by this script;
#   - skillz (PyPI), a skills server, on the same 200 synthetic skills as ours: each skill is a
#     tool there, and calling it returns the body, as SkillLoad does here.
# beside the floor: the driver's own bare echo loop. It prints one table: figure, synapse-mcp, each
# peer, and how many times synapse-mcp is better. Nothing passes or fails on absolute times.
#
# Manual, never in CI (it installs from the registries). Needs cargo, node + npm, and a Python
# >= 3.12 for skillz (3.10+ for the echo server alone). Usage:
#   benches/peers.sh                    # installs into a temporary folder, removed at the end
#   PEERS_DIR=/tmp/peers benches/peers.sh   # keeps and reuses the installs there
#   CALLS=5000 IN_FLIGHT=8 STARTS=5 benches/peers.sh
#   PROFILE=ci benches/peers.sh         # the `ci` build instead of `release`
#   ROUNDS=3 benches/peers.sh           # every server measured in turn, three times over;
#                                       # the table shows each figure's median of the rounds
# synapse-mcp is measured on the memory store and on SQLite (a fresh data folder each round).
set -euo pipefail
cd "$(dirname "$0")/.."
repository=$PWD

calls=${CALLS:-2000}
# `PROFILE=ci` measures the build CI shares (release code; no debug information, symbols kept),
# instead of building the release profile.
profile=${PROFILE:-release}
in_flight=${IN_FLIGHT:-8}
starts=${STARTS:-3}
rounds=${ROUNDS:-1}
if [[ -n "${PEERS_DIR:-}" ]]; then
  work=$PEERS_DIR
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
results=$work/results
rm -rf "$results" "$work/skills"
mkdir -p "$results"

say() { printf '== %s\n' "$*" >&2; }

say "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
say "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
source "$repository/benches/awake.sh"
hold_cpus_awake >&2

say "installing @modelcontextprotocol/server-everything (npm) into $work/npm"
if [[ ! -f "$work/npm/node_modules/@modelcontextprotocol/server-everything/package.json" ]]; then
  npm install --prefix "$work/npm" --no-audit --no-fund --loglevel=error \
    @modelcontextprotocol/server-everything >&2
fi
everything_package=$work/npm/node_modules/@modelcontextprotocol/server-everything
everything=$everything_package/dist/index.js

# skillz needs Python 3.12 or newer; pyenv's shims only run the version it selects, so its
# installed versions are tried by path as well.
python=
for candidate in python3.13 python3.12 python3 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3; do
  if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
    python=$candidate
    break
  fi
done
with_skillz=yes
if [[ -z "$python" ]]; then
  say "no Python >= 3.12: skillz is left out; the echo server runs on python3"
  python=python3
  with_skillz=no
fi
say "installing mcp$([[ $with_skillz == yes ]] && echo ' and skillz') (PyPI) into $work/venv with $("$python" --version)"
if [[ ! -x "$work/venv/bin/python" ]]; then
  "$python" -m venv "$work/venv"
fi
packages=(mcp)
[[ $with_skillz == yes ]] && packages+=(skillz)
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}" >&2

cat >"$work/echo_server.py" <<'PYTHON'
"""The smallest MCP server on the official Python SDK: one tool that echoes its message."""
try:
    from mcp.server.mcpserver import MCPServer as Server  # mcp 2.x
except ImportError:
    from mcp.server.fastmcp import FastMCP as Server  # mcp 1.x

server = Server("echo")


@server.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


if __name__ == "__main__":
    server.run()
PYTHON

say "building synapse-mcp, load_driver and skills_bench (profile $profile)"
# Two builds: one with the examples would give the server binary the dev-dependencies' features.
cargo build --profile "$profile" --locked --bin synapse-mcp >&2
cargo build --profile "$profile" --locked --example load_driver --example skills_bench >&2
synapse=$repository/target/$profile/synapse-mcp
driver=$repository/target/$profile/examples/load_driver
skill=$("$repository/target/$profile/examples/skills_bench" generate "$work/skills" 200)

versions() {
  printf 'synapse-mcp %s' "$("$synapse" --version | awk '{print $2}')"
  printf ', server-everything %s' "$(node -p "require('$everything_package/package.json').version" 2>/dev/null || echo '?')"
  "$work/venv/bin/pip" list --format=freeze 2>/dev/null | grep -iE '^(mcp|skillz)==' | tr '\n' ' ' | sed 's/^/, /'
  printf ', node %s, %s\n' "$(node --version)" "$("$work/venv/bin/python" --version)"
}

kilobyte=$(head -c 1024 /dev/zero | tr '\0' x)
round=1
drive() {
  local name=$1
  shift
  say "measuring $name (round $round of $rounds)"
  "$driver" --label "$name" --calls "$calls" --in-flight "$in_flight" --starts "$starts" "$@" \
    >"$results/$name.$round.json"
}

# Alternated: each round measures every server once, so that a change in the machine's state
# during the run touches all of them alike.
for ((round = 1; round <= rounds; round++)); do
  drive floor --floor --tool echo --arguments "{\"message\":\"$kilobyte\"}"
  drive synapse --tool ReadVar --arguments '{"name":"kb"}' \
    --setup WriteVar "{\"name\":\"kb\",\"value\":\"$kilobyte\"}" \
    -- "$synapse" --store memory --log-level error
  # The default store: SQLite in the data folder, fresh each round.
  rm -rf "$work/synapse-sqlite"
  drive synapse-sqlite --tool ReadVar --arguments '{"name":"kb"}' \
    --setup WriteVar "{\"name\":\"kb\",\"value\":\"$kilobyte\"}" \
    -- "$synapse" --data-dir "$work/synapse-sqlite" --log-level error
  drive everything --tool echo --arguments "{\"message\":\"$kilobyte\"}" -- node "$everything" stdio
  drive python-echo --tool echo --arguments "{\"message\":\"$kilobyte\"}" \
    -- "$work/venv/bin/python" "$work/echo_server.py"
  # The skills servers read the same folder. Ours keeps its index in its data folder, so its first
  # start is cold and the next ones warm (the median of three starts is a warm one).
  drive synapse-skills --tool SkillLoad --arguments "{\"name\":\"$skill\",\"force\":true}" \
    -- "$synapse" --skills "$work/skills" --data-dir "$work/synapse-data" --store memory --log-level error
  if [[ $with_skillz == yes ]]; then
    drive skillz --tool "$skill" --arguments '{"task":"benchmark"}' \
      -- "$work/venv/bin/skillz" "$work/skills"
  fi
done
say "idle memory: synapse-mcp and server-everything"
idle_synapse=$(python3 "$repository/benches/idle_memory.py" "$synapse" 3 | tail -1)
idle_everything=$(python3 "$repository/benches/idle_memory.py" --command node "$everything" stdio | tail -1)

say "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "peers: $(versions)"
echo "$calls sequential calls and $calls with $in_flight in flight after 200 unmeasured; initialize: median of $starts starts; medians of $rounds round(s)"
echo "idle, synapse-mcp: $idle_synapse"
echo "idle, server-everything: $idle_everything"
echo
"$work/venv/bin/python" - "$results" <<'PYTHON'
"""Render the driver's JSON files as one markdown table."""
import json
import pathlib
import statistics
import sys

results = pathlib.Path(sys.argv[1])


def load(name):
    """Every round's result of `name`, or None when it was not measured."""
    rounds = [json.loads(path.read_text()) for path in sorted(results.glob(f"{name}.*.json"))]
    return rounds or None


def median(rounds, pick):
    values = [pick(result) for result in rounds]
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None

rows = [
    ("start → initialize answered, median (ms)", lambda r: r["initialize_ms"]["p50"], "lower"),
    ("sequential round trip p50 (µs)", lambda r: r["sequential"]["p50_us"], "lower"),
    ("sequential round trip p90 (µs)", lambda r: r["sequential"]["p90_us"], "lower"),
    ("sequential round trip p99 (µs)", lambda r: r["sequential"]["p99_us"], "lower"),
    ("sequential round trip max (µs)", lambda r: r["sequential"]["max_us"], "lower"),
    ("pipelined round trip p50 (µs)", lambda r: r["pipelined"]["p50_us"], "lower"),
    ("pipelined round trip p99 (µs)", lambda r: r["pipelined"]["p99_us"], "lower"),
    ("pipelined throughput (calls/s)", lambda r: r["pipelined"]["calls_per_second"], "higher"),
    ("server CPU per sequential call (µs)", lambda r: r["server_cpu_per_call_us"], "lower"),
    ("peak RSS, VmHWM (MiB)", lambda r: r["peak_rss_mib"], "lower"),
]


def cell(value):
    if value is None:
        return "–"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def table(title, ours_name, ours_label, peers, floor=None):
    ours = load(ours_name)
    peers = [(label, load(name)) for label, name in peers]
    peers = [(label, result) for label, result in peers if result]
    header = ["figure"]
    if floor:
        header.append("echo floor")
    header.append(ours_label)
    for label, _ in peers:
        header += [label, "×"]
    print(f"**{title}**\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for figure, pick, better in rows:
        line = [figure]
        if floor:
            line.append(cell(median(floor, pick)))
        mine = median(ours, pick)
        line.append(cell(mine))
        for _, result in peers:
            theirs = median(result, pick)
            line.append(cell(theirs))
            if mine and theirs:
                ratio = theirs / mine if better == "lower" else mine / theirs
                line.append(f"{ratio:.1f}×")
            else:
                line.append("–")
        print("| " + " | ".join(line) + " |")
    print()


PEERS = [("server-everything (TS)", "everything"), ("mcp MCPServer (Python)", "python-echo"), ("skillz (Python)", "skillz")]
table("Trivial tool: ReadVar of a 1 KB variable (ours) vs echo of a 1 KB message (peers)",
      "synapse", "synapse-mcp", PEERS[:2], floor=load("floor"))
table("The same on the SQLite store",
      "synapse-sqlite", "synapse-mcp (SQLite)", PEERS[:1], floor=load("floor"))
floor, ours = load("floor"), load("synapse")
if floor and ours:
    ratios = [r["sequential"]["p50_us"] / f["sequential"]["p50_us"] for r, f in zip(ours, floor)]
    print("ReadVar p50 ÷ the echo floor of the same round: " + ", ".join(f"{ratio:.2f}×" for ratio in ratios))
    print()
table("Skills, 200 synthetic skills in one folder: SkillLoad (ours) vs the skill's tool (skillz)",
      "synapse-skills", "synapse-mcp", PEERS[2:])
print("× = how many times synapse-mcp is better: peer ÷ synapse-mcp (for calls/s, synapse-mcp ÷ peer).")
for path in sorted(results.glob("*.json")):
    result = json.loads(path.read_text())
    if result["failures"]:
        print(f"{result['label']}: {result['failures']} failed calls, first: {result['first_failure']}")
PYTHON
