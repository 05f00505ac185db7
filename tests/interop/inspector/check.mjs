// The interop stage's Inspector check: the MCP Inspector's CLI (what server authors and many users
// try a server with) runs each method it offers against the built synapse-mcp, one process per
// method as a user would, in both protocol eras. `tools/list --strict` lints every tool schema for
// portability: an error fails the stage, warnings are counted and printed one per line. Any
// non-zero exit, error envelope or error line fails the check.
//
//     node inspector/check.mjs --binary target/debug/synapse-mcp

import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const STAGE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = join(STAGE, "node_modules", "@modelcontextprotocol", "inspector", "clients", "cli", "build", "index.js");
const LABEL = "inspector";

let passed = 0;
const failed = [];
const warnings = new Set();
const PARALLEL = 4;

function ok(name, detail) {
  passed += 1;
  console.log(`ok   ${LABEL} ${name}${detail ? `: ${detail}` : ""}`);
}

function fail(name, message) {
  failed.push(name);
  console.log(`FAIL ${LABEL} ${name}: ${String(message).split(/\s+/).join(" ").slice(0, 600)}`);
}

async function main() {
  const args = process.argv.slice(2);
  const binaryAt = args.indexOf("--binary");
  if (binaryAt < 0 || !args[binaryAt + 1]) {
    console.error("usage: node inspector/check.mjs --binary PATH");
    return 2;
  }
  const binary = resolve(args[binaryAt + 1]);
  const work = mkdtempSync(join(tmpdir(), "synapse-interop-inspector-"));
  try {
    await run(binary, work);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  console.log(`${LABEL}: ${warnings.size} distinct warnings`);
  for (const warning of warnings) console.log(`       warning ${warning}`);
  console.log(`${LABEL}: ${passed} passed, ${failed.length} failed`);
  return failed.length > 0 ? 1 : 0;
}

async function run(binary, work) {
  const home = join(work, "home");
  const skills = join(work, "skills");
  mkdirSync(home);
  cpSync(join(STAGE, "fixtures", "skills"), skills, { recursive: true });
  const scenario = JSON.parse(readFileSync(join(STAGE, "scenario.json"), "utf8"));
  // One data folder for every invocation: what one process writes, the next one reads.
  const server = [
    binary,
    "--data-dir", join(work, "data"),
    "--skills", skills,
    "--config", join(STAGE, "fixtures", "config.toml"),
    "--log-level", "warn",
  ];

  /// Runs the CLI once; returns the parsed JSON result (or NDJSON lines) and the stderr lines.
  const inspect = async (era, method, extra = []) => {
    const cli = [CLI, "--method", method, "--format", "json", "--protocol-era", era, ...extra, "--", ...server];
    const ran = await new Promise((done) => {
      const child = spawn(process.execPath, cli, {
        cwd: work,
        env: { ...process.env, HOME: home, XDG_DATA_HOME: join(home, ".local", "share") },
        stdio: ["ignore", "pipe", "pipe"],
        timeout: 60_000,
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk) => { stdout += chunk; });
      child.stderr.on("data", (chunk) => { stderr += chunk; });
      child.on("error", (error) => done({ error, status: null, stdout, stderr }));
      child.on("close", (status, signal) => done({ status, signal, stdout, stderr }));
    });
    const stderr = (ran.stderr ?? "").split("\n").filter((line) => line.trim());
    const stdout = (ran.stdout ?? "").trim();
    let output;
    try {
      output = stdout.startsWith("{") && !stdout.includes("\n{") ? JSON.parse(stdout) : stdout.split("\n").filter(Boolean).map((line) => JSON.parse(line));
    } catch {
      output = stdout;
    }
    return { status: ran.status, signal: ran.signal, error: ran.error, output, stderr };
  };

  /// One check: the method must exit 0 with no error envelope and no error line on stderr. It
  /// returns its verdict; `phase` prints the verdicts in the order the checks were written.
  const check = async (era, method, extra, verdict) => {
    const name = `${era} ${method}${extra.length ? " " + extra.filter((part) => !part.startsWith("{")).join(" ") : ""}`;
    const ran = await inspect(era, method, extra);
    const envelope = ran.stderr.find((line) => line.startsWith('{"error"'));
    const errorLines = ran.stderr.filter((line) => / ERROR |panicked/.test(line));
    for (const line of ran.stderr) {
      if (/unknown format/.test(line)) warnings.add(`${method} (the SDK's validator): ${line}`);
    }
    try {
      if (ran.error) throw new Error(`the CLI did not run: ${ran.error.message}`);
      const detail = verdict ? verdict(ran) : undefined;
      if (ran.status !== 0) throw new Error(`exit ${ran.status ?? ran.signal}${envelope ? `: ${envelope}` : `: ${ran.stderr.slice(-3).join(" | ")}`}`);
      if (errorLines.length) throw new Error(`server error: ${errorLines[0]}`);
      return { name, passed: true, detail, output: ran.output };
    } catch (error) {
      return { name, passed: false, detail: error.message };
    }
  };

  /// Runs checks a few at a time (each is a separate CLI and server process), then prints them.
  const phase = async (checks) => {
    const verdicts = new Array(checks.length);
    let next = 0;
    const worker = async () => {
      while (next < checks.length) {
        const index = next++;
        verdicts[index] = await checks[index]();
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    for (const verdict of verdicts) {
      if (verdict.passed) ok(verdict.name, verdict.detail);
      else fail(verdict.name, verdict.detail);
    }
    return verdicts;
  };

  const strict = (ran) => {
    const report = lint(ran.stderr);
    for (const problem of report.problems.filter((problem) => problem.severity === "warning")) {
      warnings.add(`tools/list --strict ${problem.tool} ${problem.path}: ${problem.issue}`);
    }
    const errors = report.problems.filter((problem) => problem.severity === "error");
    if (errors.length) {
      throw new Error(`${errors.length} schema error(s): ${errors.map((problem) => `${problem.tool} ${problem.path}: ${problem.issue}`).join(" | ")}`);
    }
    return report.summary ?? "no portability problems";
  };
  const initialize = (wanted) => (ran) => {
    const version = ran.output?.result?.protocolVersion;
    if (version !== wanted) throw new Error(`negotiated ${version}, expected ${wanted}`);
    return `protocol ${version}`;
  };
  const call = (era, tool, toolArguments) => () =>
    check(era, "tools/call", ["--tool-name", tool, "--tool-args-json", JSON.stringify(toolArguments)], (ran) => {
      const result = ran.output?.result;
      if (result?.isError) throw new Error(`tool error: ${JSON.stringify(result.content).slice(0, 300)}`);
      return `${tool}${result?.structuredContent ? ", structured content" : ""}`;
    });
  const read = (era, step) => () =>
    check(era, "resources/read", ["--uri", step.read], (ran) => {
      const text = (ran.output?.result?.contents ?? []).map((content) => content.text ?? "").join("");
      if (step.expectText && !text.includes(step.expectText)) throw new Error(`${step.read} does not contain ${JSON.stringify(step.expectText)}`);
      return `${step.read}: ${text.length} characters`;
    });
  const verified = (ran) => ran.stderr.find((line) => /Verified|failed|Checked/.test(line)) ?? "";
  const literal = (tool) => scenario.steps.find((step) => step.call === tool && !JSON.stringify(step.arguments).includes("${")).arguments;
  const reads = scenario.steps.filter((step) => step.read && !step.read.includes("${"));

  // Initialize era (the CLI's default for a command line): every method the CLI offers that
  // needs no human at the keyboard.
  const [, , , prompts] = await phase([
    () => check("legacy", "initialize", [], initialize("2025-11-25")),
    () => check("legacy", "tools/list", ["--strict"], strict),
    () => check("legacy", "resources/templates/list", [], (ran) => `${ran.output?.result?.resourceTemplates?.length} templates`),
    () => check("legacy", "prompts/list", [], (ran) => `${ran.output?.result?.prompts?.length} prompts`),
    () => check("legacy", "logging/setLevel", ["--log-level", "info"]),
    () => check("legacy", "skills/list", ["--verify"], verified),
    () => check("legacy", "skills/get", ["--verify", "--uri", "skill://interop-greeting/SKILL.md"], verified),
  ]);
  await phase([
    ...(prompts.output?.result?.prompts ?? []).map((prompt) => () => {
      const values = Object.entries(scenario.prompts[prompt.name] ?? {}).map(([key, value]) => `${key}=${value}`);
      return check("legacy", "prompts/get", ["--prompt-name", prompt.name, ...(values.length ? ["--prompt-args", ...values] : [])],
        (ran) => `${ran.output?.result?.messages?.length} message(s)`);
    }),
    call("legacy", "WriteVar", literal("WriteVar")),
    call("legacy", "WriteState", literal("WriteState")),
    call("legacy", "SkillSearch", literal("SkillSearch")),
    call("legacy", "SkillLoad", { name: "interop-greeting" }),
  ]);
  await phase([
    () => check("legacy", "resources/list", [], (ran) => `${ran.output?.result?.resources?.length} resources`),
    call("legacy", "ReadVar", literal("ReadVar")),
    call("legacy", "ReadState", literal("ReadState")),
    ...reads.map((step) => read("legacy", step)),
  ]);
  // 2026-07-28: the sessionless era, on what the first era wrote.
  await phase([
    // 2026-07-28 has no logging/setLevel (the SDK refuses it before it reaches the wire): a
    // client asks for log messages per request in `_meta`, so the check is that discovery
    // advertises logging; the Python check drives the per-request level itself.
    () => check("modern", "initialize", [], (ran) => {
      const negotiated = initialize("2026-07-28")(ran);
      if (!ran.output?.result?.capabilities?.logging) throw new Error("discovery does not advertise logging");
      return `${negotiated}, logging advertised`;
    }),
    () => check("modern", "tools/list", ["--strict"], strict),
    () => check("modern", "resources/list", [], (ran) => `${ran.output?.result?.resources?.length} resources`),
    call("modern", "ReadVar", literal("ReadVar")),
    read("modern", reads[0]),
  ]);
}

/// The `--strict` report on stderr: blocks of `Error:`/`Warning: tool "X"`, `Path:`, `Issue:`,
/// `Suggestion:`, and a closing `N errors, M warnings across K tools.`
function lint(lines) {
  const problems = [];
  let summary;
  let current;
  for (const line of lines) {
    const head = /^(Error|Warning): tool "([^"]+)"/.exec(line);
    if (head) {
      current = { severity: head[1].toLowerCase(), tool: head[2], path: "", issue: "" };
      problems.push(current);
    } else if (current && /^\s+Path:/.test(line)) {
      current.path = line.replace(/^\s+Path:\s*/, "");
    } else if (current && /^\s+Issue:/.test(line)) {
      current.issue = line.replace(/^\s+Issue:\s*/, "").split(/(?<=\.)\s/)[0];
    } else if (/^\d+ errors?, \d+ warnings?/.test(line)) {
      summary = line;
    }
  }
  return { problems, summary };
}

main().then((code) => process.exit(code), (error) => {
  console.log(`FAIL ${LABEL}: the check itself crashed: ${error?.stack ?? error}`);
  process.exit(1);
});
