#!/usr/bin/env python3
"""Counts a built-in tool's own code in src/groups: the average lines of code a tool adds beside
its argument and output types (the architecture keeps it at 15 or fewer; docs/architecture.md).

    benches/tool_lines.py --with-groups-rs        the figure; -v classifies every item

Rules: every .rs file under src/groups/ (src/groups/script_tools* excluded) and, with
--with-groups-rs (the number reported), src/groups.rs (the table of built-in groups), split into
top-level items.
Counted: non-blank lines that are not comments (`//`, `///`, `//!`, block comments), of every
item except
  - `use` and `mod` items,
  - the `group()` builders (`fn group`, and `fn agent_group`, the `Agent` group's),
  - `#[cfg(test)]` items,
  - types deriving Serialize or Deserialize (argument and output types), and impls of them
    (`impl X for T` / `impl T` naming such a type, except `impl TypedTool for`),
  - description string constants (`const X: &str = ...;`; a group's `GROUP` and a tool's `NAME`
    constants are names, not descriptions, and count).
Group-wide helpers (annotation constants, `declare`, `service`, helper fns and types) count.
The average is the total over the number of `impl TypedTool for` items.
"""
import re
import sys
from pathlib import Path


def strip_code(line, state):
    """The line without string/char literals and comments, for brace counting; `state` carries
    an open string or block comment across lines."""
    out = []
    i = 0
    n = len(line)
    while i < n:
        if state["block"]:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out)
            state["block"] = False
            i = end + 2
            continue
        if state["string"] is not None:
            hashes = state["string"]
            if hashes == -1:  # ordinary string
                if line[i] == "\\":
                    i += 2
                    continue
                if line[i] == '"':
                    state["string"] = None
                i += 1
                continue
            close = '"' + "#" * hashes
            end = line.find(close, i)
            if end < 0:
                return "".join(out)
            state["string"] = None
            i = end + len(close)
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state["block"] = True
            i += 2
            continue
        m = re.match(r'r(#*)"', line[i:])
        if m and (i == 0 or not (line[i - 1].isalnum() or line[i - 1] == "_")):
            state["string"] = len(m.group(1))
            i += len(m.group(0))
            out.append('""')
            continue
        if c == '"':
            state["string"] = -1
            i += 1
            out.append('""')
            continue
        if c == "'":
            m = re.match(r"'(\\.|[^\\'])'", line[i:]) or re.match(r"'\\u\{[0-9a-fA-F]+\}'", line[i:])
            if m:
                i += len(m.group(0))
                out.append("' '")
                continue
        out.append(c)
        i += 1
    return "".join(out)


def is_comment_or_blank(line):
    s = line.strip()
    return not s or s.startswith("//") or s.startswith("/*") or s.startswith("*")


def items(text):
    """Top-level items: (attribute and header lines, all lines)."""
    state = {"block": False, "string": None}
    depth = 0
    current = []
    result = []
    for line in text.splitlines():
        in_block_before = state["block"] or state["string"] is not None
        code = strip_code(line, state)
        stripped = line.strip()
        if depth == 0 and not current and not in_block_before and is_comment_or_blank(line):
            continue
        current.append(line)
        depth += code.count("{") + code.count("(") + code.count("[")
        depth -= code.count("}") + code.count(")") + code.count("]")
        if depth == 0 and state["string"] is None and not state["block"]:
            c = code.strip()
            if c.endswith("}") or c.endswith(";"):
                result.append(current)
                current = []
    if current:
        result.append(current)
    return result


def code_lines(lines):
    state = {"block": False, "string": None}
    count = 0
    for line in lines:
        in_literal = state["string"] is not None
        in_block = state["block"]
        strip_code(line, state)
        if in_block:
            continue
        if not in_literal and is_comment_or_blank(line):
            continue
        if not line.strip():
            continue
        count += 1
    return count


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else ".")
    verbose = "-v" in sys.argv
    files = sorted(
        p for p in (root / "src/groups").rglob("*.rs")
        if not p.relative_to(root / "src/groups").parts[0].startswith("script_tools")
    )
    if "--with-groups-rs" in sys.argv:
        files.append(root / "src/groups.rs")
    parsed = []
    serde_types = set()
    for path in files:
        for item in items(path.read_text()):
            parsed.append((path, item))
            head = "\n".join(l for l in item if not l.strip().startswith("//"))
            if re.search(r"derive\([^)]*(Serialize|Deserialize)", head):
                m = re.search(r"\b(?:struct|enum)\s+(\w+)", head)
                if m:
                    serde_types.add(m.group(1))
    total = 0
    tools = 0
    per_file = {}
    for path, item in parsed:
        body = [l for l in item if not l.strip().startswith("//")]
        head = "\n".join(body)
        first = next((l.strip() for l in body if not l.strip().startswith("#[")), "")
        kind = "counted"
        if re.match(r"(pub(\([^)]*\))?\s+)?(use|mod)\b", first):
            kind = "use/mod"
        elif "#[cfg(test)]" in head:
            kind = "test"
        elif re.match(r"(pub(\([^)]*\))?\s+)?fn\s+(group|agent_group)\b", first):
            kind = "group builder"
        elif re.search(r"derive\([^)]*(Serialize|Deserialize)", head):
            kind = "serde type"
        elif re.match(r"(pub(\([^)]*\))?\s+)?const\s+(?!GROUP\b|NAME\b)\w+\s*:\s*&(?:'static\s+)?str\b", first):
            kind = "description"
        elif first.startswith("impl"):
            header = first.split("{")[0]
            if re.search(r"TypedTool(<.*>)? for", header):
                tools += 1
            else:
                names = set(re.findall(r"\b\w+\b", header))
                if names & serde_types:
                    kind = "serde impl"
        lines = code_lines(item)
        if kind == "counted":
            total += lines
            per_file[path] = per_file.get(path, 0) + lines
        if verbose:
            print(f"{kind:14} {lines:4}  {path.relative_to(root)}: {first[:70]}")
    for path, lines in per_file.items():
        print(f"{lines:5}  {path.relative_to(root)}")
    print(f"total {total} lines over {tools} tools: {total / tools:.1f} per tool")


main()
