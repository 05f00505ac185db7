#!/usr/bin/env python3
"""The cost gate: instructions per request, counted by callgrind, against budgets kept here.

A black-box stdio client. For each scenario it starts the server under
`valgrind --tool=callgrind` twice, with the same configuration file, the same fixed folders and
the same requests, once with WARM_UP measured calls and once with WARM_UP + `calls` (300; more
for the cheapest), and reads the difference of the two totals divided by `calls`: the
instructions one call costs, from the line read off the pipe to the answer written back, on
every thread of the server (start-up and shutdown cancel out).
Instruction counts do not move with the machine's load or clock; they move with the compiler
(the toolchain is pinned in rust-toolchain.toml), with code paths chosen by CPU features and with
hash seeds, which is what each budget's tolerance band covers.

The server is configured only through what every tree since November 2026 accepts: a TOML file
(`--config`), `--store` and `--skills`, with HOME and XDG_DATA_HOME pointing into a scratch
folder, so the same harness counts old trees and new ones alike.

    benches/cost/gate.py SERVER              check SERVER against benches/cost/budgets.toml
    benches/cost/gate.py SERVER --report     print the counts only (for an old tree, say)
    benches/cost/gate.py SERVER --only NAME  one scenario (repeatable)

Exit status 1 when a count is over its budget's band, with the figure and the budget; raising a
budget is a commit of its own that says why (BENCHMARKS.md, "The cost gate").
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stdio_client import Server  # noqa: E402

HERE = Path(__file__).resolve().parent
WARM_UP = 20
KILOBYTE = "x" * 1024

# A fixed scratch path keeps every path the server sees the same length from run to run.
SCRATCH = Path(tempfile.gettempdir()) / "synapse-cost-gate"


@dataclass
class Scenario:
    name: str
    """What one measured call is, for the table."""
    what: str
    """The measured call: method and params for call number `index`."""
    call: Callable[[int], tuple[str, dict]]
    """Calls made once before the warm-up (variables to read, a template, …)."""
    setup: list[tuple[str, dict]] = field(default_factory=list)
    store: str = "memory"
    skills: int = 0
    """Measured calls: more for the cheapest, whose few thousand instructions of start-up noise
    (hash seeds, lock spins while threads start) would otherwise show."""
    calls: int = 300


def tool(name: str, arguments: dict) -> tuple[str, dict]:
    return "tools/call", {"name": name, "arguments": arguments}


def plan_steps(id_key: str = "_id") -> list[dict]:
    """Five steps in a chain, each reading the one before through a reference. Trees before
    December 2026 name a step `id`, later ones `_id` (the gate asks which, see `session`)."""
    steps = [{id_key: "s0", "_tool": "ReadVar", "name": "doc", "length": 64}]
    for index in range(1, 5):
        steps.append(
            {
                id_key: f"s{index}",
                "_tool": "WriteVar",
                "name": f"plan{index}",
                "value": f"†steps.s{index - 1}",
            }
        )
    return steps


SCENARIOS = [
    Scenario("ping", "an idle `ping`", lambda index: ("ping", {}), calls=1500),
    Scenario(
        "read_var",
        "ReadVar of 1 KB, memory store",
        lambda index: tool("ReadVar", {"name": "doc"}),
        setup=[tool("WriteVar", {"name": "doc", "value": KILOBYTE})],
    ),
    Scenario(
        "read_var_sqlite",
        "ReadVar of 1 KB, SQLite store",
        lambda index: tool("ReadVar", {"name": "doc"}),
        setup=[tool("WriteVar", {"name": "doc", "value": KILOBYTE})],
        store="sqlite",
    ),
    Scenario(
        "write_var",
        "WriteVar of 1 KB to one of 10 names, memory store",
        lambda index: tool("WriteVar", {"name": f"w{index % 10}", "value": KILOBYTE}),
    ),
    Scenario(
        "var_ref",
        "WriteVar whose value is `$VAR_REF{{doc:0:512}}`",
        lambda index: tool("WriteVar", {"name": "copy", "value": "$VAR_REF{{doc:0:512}}"}),
        setup=[tool("WriteVar", {"name": "doc", "value": KILOBYTE})],
    ),
    Scenario(
        "skill_search",
        "SkillSearch over 200 skills",
        lambda index: tool("SkillSearch", {"query": "merge quarterly sales spreadsheets"}),
        skills=200,
    ),
    Scenario(
        "skill_load",
        "SkillLoad of one of 200 skills",
        lambda index: tool("SkillLoad", {"name": "skill-042"}),
        skills=200,
    ),
    Scenario(
        "snapshot_apply",
        "SnapshotApply of a text with three calls",
        lambda index: tool(
            "SnapshotApply",
            {
                "chatFile": "cost-gate",
                "text": 'The hero rests. @.SET("hero.hp", 5); @.ADD("hero.gold", 10); '
                '@.SET("scene", "inn");',
            },
        ),
    ),
    Scenario(
        "run_plan",
        "RunPlan of five chained steps",
        lambda index, id_key="_id": tool("RunPlan", {"steps": plan_steps(id_key)}),
        setup=[tool("WriteVar", {"name": "doc", "value": KILOBYTE})],
    ),
]

CONFIG = """\
# Written by benches/cost/gate.py: every tool a scenario calls is on and runs without asking.
# (Older trees had the snapshot tools on without being asked; `[groups]` is read by all.)
[groups]
snapshots = true
[tools.RunPlan]
execution = "auto"
[tools.SnapshotApply]
execution = "auto"
[tools.WriteVar]
execution = "auto"
"""

WORDS = (
    "merge split convert report chart table sheet invoice budget forecast sales quarterly "
    "audit ledger payroll schedule calendar meeting notes summary draft letter contract "
    "review image photo resize crop video audio transcript subtitle translate language "
    "code test deploy server database query index backup restore archive compress email"
).split()


def write_skills(root: Path, count: int) -> None:
    """`count` skills whose names, descriptions and bodies are fixed by their number."""
    for number in range(count):
        name = f"skill-{number:03d}"
        words = [WORDS[(number * 7 + offset * 3) % len(WORDS)] for offset in range(8)]
        folder = root / name
        folder.mkdir(parents=True)
        body = "\n".join(
            f"## Step {step}\n\nUse {words[step]} with {words[(step + 3) % 8]} carefully.\n"
            for step in range(6)
        )
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {' '.join(words)} for everyday {words[0]} work.\n"
            f"---\n\n# {name}\n\n{body}",
            encoding="utf-8",
        )


def total_instructions(output: Path) -> int:
    for line in output.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {output}")


def session(server: Path, scenario: Scenario, calls: int, folder: Path) -> tuple[int, int]:
    """Instructions of one whole session of `calls` measured calls after the setup, and how
    many times it polled for the skills to load."""
    if folder.exists():
        shutil.rmtree(folder)
    home = folder / "home"
    home.mkdir(parents=True)
    skills = folder / "skills"
    skills.mkdir()
    write_skills(skills, scenario.skills)
    config = folder / "config.toml"
    config.write_text(CONFIG, encoding="utf-8")
    store = "memory" if scenario.store == "memory" else f"sqlite://{folder / 'store.db'}"
    output = folder / "callgrind.out"
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={output}",
        "--dump-instr=no",
        "--compress-strings=no",
        str(server),
        "--config",
        str(config),
        "--store",
        store,
        "--skills",
        str(skills),
    ]
    environment = {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
    }
    process = Server(command, environment)
    process.initialize("cost-gate")
    polls = 0
    if scenario.skills:
        # The catalog loads behind the first answer, on a thread of its own: wait for it with
        # few polls (each poll is counted, and their number must not vary much between runs).
        # The bodies' index is built after the catalog, on the same thread: wait for it too, or
        # its building falls inside the measured calls (more of it the slower the machine).
        for _ in range(600):
            time.sleep(0.5)
            polls += 1
            if process.ask(*tool("SkillLoad", {"name": "skill-000"})).get("isError"):
                continue
            found = process.ask(*tool("SkillSearch", {"query": "skill"}))
            if not (found.get("structuredContent") or {}).get("metadata_only"):
                break
        else:
            raise RuntimeError("the skills never loaded")
        # What the load does after it answers (the rest of the index, on its thread) must end
        # before the measured calls in both sessions, or the shorter session is closed while
        # it still runs (the shorter session's count then varied by 3 M instructions).
        time.sleep(3)
    for method, params in scenario.setup:
        process.request(method, params)
    call = scenario.call
    if scenario.name == "run_plan":
        probe = process.ask(*tool("RunPlan", {"steps": plan_steps(), "dryRun": True}))
        if probe.get("isError"):
            call = lambda index: scenario.call(index, "id")  # noqa: E731
    for index in range(calls):
        process.request(*call(index))
    process.close()
    return total_instructions(output), polls


def count(server: Path, scenario: Scenario) -> int:
    """Instructions per measured call."""
    folder = SCRATCH / scenario.name
    # A poll for the skills is a SkillLoad and a SkillSearch (about 0.5 M instructions): the
    # two sessions must have polled as often, or the difference counts a poll (±8 % of a
    # SkillLoad). How often depends on the machine's speed, so a session is run again until
    # they agree.
    for _ in range(5):
        before, polled_before = session(server, scenario, WARM_UP, folder)
        after, polled_after = session(server, scenario, WARM_UP + scenario.calls, folder)
        if polled_before == polled_after:
            break
    else:
        raise RuntimeError(f"{scenario.name}: the sessions never polled as often for the skills")
    return round((after - before) / scenario.calls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("server", type=Path)
    parser.add_argument("--budgets", type=Path, default=HERE / "budgets.toml")
    parser.add_argument("--report", action="store_true", help="print counts, check nothing")
    parser.add_argument("--only", action="append", default=[], help="one scenario by name")
    arguments = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    budgets = tomllib.loads(arguments.budgets.read_text(encoding="utf-8"))
    tolerance = budgets["tolerance"]
    failures = []
    print(f"{'scenario':<17} {'instructions/call':>18} {'budget':>10} {'band':>6}  verdict")
    for scenario in SCENARIOS:
        if arguments.only and scenario.name not in arguments.only:
            continue
        measured = count(arguments.server.resolve(), scenario)
        entry = budgets["budget"].get(scenario.name, {})
        budget = entry.get("instructions")
        band = entry.get("tolerance", tolerance)
        if arguments.report or budget is None:
            verdict = "no budget" if budget is None and not arguments.report else "-"
            print(f"{scenario.name:<17} {measured:>18,} {'':>10} {'':>6}  {verdict}")
            if budget is None and not arguments.report:
                failures.append(f"{scenario.name}: no budget in {arguments.budgets}")
            continue
        ceiling = budget * (1 + band)
        over = measured > ceiling
        verdict = "OVER" if over else "ok"
        print(f"{scenario.name:<17} {measured:>18,} {budget:>10,} {band:>6.0%}  {verdict}")
        if over:
            failures.append(
                f"{scenario.name} ({scenario.what}): {measured:,} instructions per call, "
                f"over its budget of {budget:,} + {band:.0%} = {ceiling:,.0f}"
            )
        sys.stdout.flush()
    for failure in failures:
        print(f"cost gate: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
