// The interop stage's TypeScript client: the official SDK (the client inside Claude Desktop, Claude
// Code, VS Code and Cursor) drives the built synapse-mcp over stdio with its default validation:
// it compiles every output schema with Ajv when tools are listed and validates every structured
// result against it. It lists everything (all pages), runs the shared session in ../scenario.json,
// gets every prompt, completes every argument, answers the approvals, sets the log level and
// subscribes to a variable.
//
//     node typescript/check.mjs --binary target/debug/synapse-mcp
//
// One line per check; any exception, validation failure, transport error or validator warning
// (Ajv prints one for every unknown `format`) fails the run (exit 1).

import { mkdtempSync, cpSync, mkdirSync, readFileSync, rmSync, createWriteStream, writeFileSync } from "node:fs";
import { generateKeyPairSync, sign } from "node:crypto";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { discoverOAuthProtectedResourceMetadata, extractResourceMetadataUrl } from "@modelcontextprotocol/sdk/client/auth.js";
import { execFileSync, spawn } from "node:child_process";
import { ElicitRequestSchema, ResultSchema } from "@modelcontextprotocol/sdk/types.js";

const STAGE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const REPOSITORY = resolve(STAGE, "..", "..");
// `--transport http`: `serve --http` on a loopback port with a bearer token instead of stdio.
const HTTP = process.argv.includes("--transport") && process.argv[process.argv.indexOf("--transport") + 1] === "http";
const LABEL = HTTP ? "typescript/2025-11-25/http" : "typescript/2025-11-25";
const WAIT_MS = 10_000;
const APPROVAL = { approve: true, reason: "approved by the interop check" };
// Over HTTP the server is also an OAuth 2.1 resource server trusting a key made here.
const ISSUER = "https://auth.interop.synapse.test";
const AUDIENCE = "https://mcp.interop.synapse.test/mcp";

/** A P-256 key standing for an authorization server: the server's OAuth options (its JWKS in a
 * file) and an ES256 access token it signed for the `default` workspace. */
function makeIssuer(work) {
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const jwk = { ...publicKey.export({ format: "jwk" }), kid: "interop-1", use: "sig", alg: "ES256" };
  const jwks = join(work, "jwks.json");
  writeFileSync(jwks, JSON.stringify({ keys: [jwk] }));
  const part = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const input = `${part({ alg: "ES256", typ: "at+jwt", kid: "interop-1" })}.${part({
    iss: ISSUER, aud: AUDIENCE, sub: "interop-oauth", workspaces: ["default"], scope: "synapse:write",
    iat: now, nbf: now, exp: now + 3600,
  })}`;
  const signature = sign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" });
  return {
    options: ["--oauth-issuer", ISSUER, "--oauth-audience", AUDIENCE, "--oauth-jwks", jwks],
    token: `${input}.${signature.toString("base64url")}`,
  };
}

/** Without a token: 401, whose challenge the SDK's OAuth code follows to our metadata. With the
 * JWT: a second client connects and lists the tools. */
async function oauthChecks(url, accessToken) {
  await check("oauth: 401 + WWW-Authenticate → metadata", async () => {
    const refused = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {
        protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "synapse-interop-typescript", version: "1.0.0" } } }),
    });
    await refused.body?.cancel();
    if (refused.status !== 401) throw new Fail(`without a token: ${refused.status}, expected 401`);
    const metadataUrl = extractResourceMetadataUrl(refused);
    if (!metadataUrl) throw new Fail(`no resource_metadata in ${refused.headers.get("www-authenticate")}`);
    const metadata = await discoverOAuthProtectedResourceMetadata(url, { resourceMetadataUrl: metadataUrl });
    if (JSON.stringify(metadata.authorization_servers) !== JSON.stringify([ISSUER])) {
      throw new Fail(`authorization_servers ${JSON.stringify(metadata.authorization_servers)}, expected ${ISSUER}`);
    }
    // Without --public-url the resource is the configured audience: the identifier the tokens
    // are issued for, wherever the client reaches the server from.
    if (metadata.resource !== AUDIENCE) throw new Fail(`resource ${metadata.resource}, expected ${AUDIENCE}`);
    return `401; metadata at ${metadataUrl} names ${ISSUER}`;
  });
  await check("oauth: connect with a JWT", async () => {
    const client = new Client({ name: "synapse-interop-typescript-oauth", version: "1.0.0" }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${accessToken}` } },
    }));
    try {
      // Reads only, as the Python client: a call would cache its result and notify.
      const { tools } = await client.listTools();
      const { prompts } = await client.listPrompts();
      return `connected with a JWT (ES256): ${tools.length} tools, ${prompts.length} prompts`;
    } finally {
      await client.close();
    }
  });
}

class Fail extends Error {}

let passed = 0;
const failed = [];

function ok(name, detail) {
  passed += 1;
  console.log(`ok   ${LABEL} ${name}${detail ? `: ${detail}` : ""}`);
}

function fail(name, message) {
  failed.push(name);
  console.log(`FAIL ${LABEL} ${name}: ${String(message).split(/\s+/).join(" ").slice(0, 600)}`);
}

async function check(name, body) {
  try {
    const detail = await body();
    ok(name, detail);
    return true;
  } catch (error) {
    const code = typeof error?.code === "number" ? ` ${error.code}` : "";
    fail(name, `${error?.constructor?.name ?? "Error"}${code}: ${error?.message ?? error}`);
    return false;
  }
}

// What the SDK's validator (Ajv) prints while compiling schemas, e.g. `unknown format "int64"
// ignored in schema at path ...`: every such line is a schema a host's client complains about.
const validatorWarnings = [];
for (const level of ["warn", "error"]) {
  console[level] = (...parts) => {
    validatorWarnings.push(parts.map(String).join(" "));
  };
}

function dig(value, path) {
  for (const segment of path.split(".")) {
    if (Array.isArray(value) && /^\d+$/.test(segment) && Number(segment) < value.length) {
      value = value[Number(segment)];
    } else if (value !== null && typeof value === "object" && !Array.isArray(value) && segment in value) {
      value = value[segment];
    } else {
      throw new Fail(`the result has nothing at \`${path}\` (stopped at \`${segment}\`)`);
    }
  }
  return value;
}

function placeholder(inner, saved) {
  const [expression, pipe] = inner.split("|");
  const dot = expression.indexOf(".");
  const step = dot < 0 ? expression : expression.slice(0, dot);
  if (!(step in saved)) {
    throw new Fail(`placeholder \`\${${inner}}\` names step \`${step}\`, which saved no result`);
  }
  const value = dot < 0 ? saved[step] : dig(saved[step], expression.slice(dot + 1));
  return pipe === "uri" ? encodeURIComponent(String(value)) : value;
}

function substitute(value, saved) {
  if (Array.isArray(value)) return value.map((item) => substitute(item, saved));
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === "$file") {
      return JSON.parse(readFileSync(join(REPOSITORY, value.$file), "utf8"));
    }
    return Object.fromEntries(keys.map((key) => [key, substitute(value[key], saved)]));
  }
  if (typeof value !== "string" || !value.includes("${")) return value;
  const whole = /^\$\{([^}]*)\}$/.exec(value);
  if (whole) return placeholder(whole[1], saved);
  return value.replace(/\$\{([^}]*)\}/g, (_, inner) => {
    const found = placeholder(inner, saved);
    return typeof found === "string" ? found : JSON.stringify(found);
  });
}

function deepEqual(left, right) {
  return JSON.stringify(left) === JSON.stringify(right);
}

function checkExpectations(step, structured, text) {
  for (const [path, wanted] of Object.entries(step.expect ?? {})) {
    if (structured === undefined) {
      throw new Fail(`expected \`${path}\` = ${JSON.stringify(wanted)} but the result has no structured content`);
    }
    const got = dig(structured, path);
    if (!deepEqual(got, wanted)) {
      throw new Fail(`\`${path}\` is ${JSON.stringify(got)}, expected ${JSON.stringify(wanted)}`);
    }
  }
  if (step.expectText !== undefined && !text.includes(step.expectText)) {
    throw new Fail(`the text does not contain ${JSON.stringify(step.expectText)}: ${JSON.stringify(text.slice(0, 300))}`);
  }
}

async function allPages(fetch, field) {
  const items = [];
  let cursor;
  for (let page = 0; page < 1000; page += 1) {
    const result = await fetch(cursor === undefined ? {} : { cursor });
    items.push(...result[field]);
    cursor = result.nextCursor;
    if (!cursor) return items;
  }
  throw new Fail(`${field}: more than 1000 pages; the cursor never ends`);
}

const textOf = (result) => result.content.filter((block) => block.type === "text").map((block) => block.text).join("");
const contentsText = (result) => result.contents.map((content) => content.text ?? content.blob ?? "").join("");
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

async function waitFor(predicate) {
  const deadline = Date.now() + WAIT_MS;
  while (!predicate() && Date.now() < deadline) await sleep(50);
  return predicate();
}

function argumentNames(uriTemplate) {
  return [...uriTemplate.matchAll(/\{([^}]*)\}/g)].map((match) => match[1].replace(/^[+#./;?&]/, ""));
}

async function main() {
  const args = process.argv.slice(2);
  const binaryAt = args.indexOf("--binary");
  if (binaryAt < 0 || !args[binaryAt + 1]) {
    console.error("usage: node typescript/check.mjs --binary PATH [--transport stdio|http] [--keep]");
    return 2;
  }
  const binary = resolve(args[binaryAt + 1]);
  const keep = args.includes("--keep");
  const work = mkdtempSync(join(tmpdir(), "synapse-interop-ts-"));
  try {
    await run(binary, work);
  } finally {
    if (keep) console.log(`     ${LABEL} kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
  if (validatorWarnings.length > 0) {
    const distinct = [...new Set(validatorWarnings)];
    fail("validator warnings", `${validatorWarnings.length} printed while compiling schemas, ${distinct.length} distinct:`);
    for (const warning of distinct) console.log(`       ${warning}`);
  } else {
    ok("validator warnings", "none");
  }
  console.log(`${LABEL}: ${passed} passed, ${failed.length} failed`);
  return failed.length > 0 ? 1 : 0;
}

async function run(binary, work) {
  const home = join(work, "home");
  const skills = join(work, "skills");
  mkdirSync(home);
  cpSync(join(STAGE, "fixtures", "skills"), skills, { recursive: true });
  const scenario = JSON.parse(readFileSync(join(STAGE, "scenario.json"), "utf8"));

  const serverArgs = [
    "--data-dir", join(work, "data"),
    "--skills", skills,
    "--config", join(STAGE, "fixtures", "config.toml"),
    "--log-level", "info",
  ];
  const env = { HOME: home, XDG_DATA_HOME: join(home, ".local", "share") };
  const serverLog = [];
  const logFile = createWriteStream(join(work, "server.log"));
  let transport;
  let server;
  let oauth;
  let url;
  if (HTTP) {
    const tokens = join(work, "tokens.toml");
    const token = execFileSync(binary, ["token", "add", "--tokens", tokens, "--principal", "interop", "--workspace", "default", "--write-skills"], { env, cwd: work, stdio: ["ignore", "pipe", "ignore"] })
      .toString()
      .trim();
    oauth = makeIssuer(work);
    server = spawn(binary, ["serve", "--http", "127.0.0.1:0", "--tokens", tokens, ...oauth.options, ...serverArgs], { env, cwd: work, stdio: ["ignore", "ignore", "pipe"] });
    server.stderr.on("data", (chunk) => serverLog.push(chunk.toString()));
    server.stderr.pipe(logFile);
    const address = await new Promise((resolveAddress, reject) => {
      const seen = (chunk) => {
        const found = serverLog.join("").match(/ready on http:\/\/([^/]+)\/mcp/);
        if (found) {
          server.stderr.off("data", seen);
          resolveAddress(found[1]);
        }
      };
      server.stderr.on("data", seen);
      server.on("exit", (code) => reject(new Error(`serve --http exited with ${code} before listening`)));
    });
    url = new URL(`http://${address}/mcp`);
    // First, while no other session is open: a new principal's first request stores the
    // workspace's rules, whose notifications would otherwise reach the main session as it closes.
    await oauthChecks(url, oauth.token);
    transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
  } else {
    transport = new StdioClientTransport({
      command: binary,
      args: serverArgs,
      env,
      cwd: work,
      stderr: "pipe",
    });
    transport.stderr?.on("data", (chunk) => serverLog.push(chunk.toString()));
    transport.stderr?.pipe(logFile);
  }

  const client = new Client(
    { name: "synapse-interop-typescript", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } } },
  );
  const questions = [];
  const notifications = [];
  const transportErrors = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    questions.push(request.params.message);
    return { action: "accept", content: APPROVAL };
  });
  client.fallbackNotificationHandler = async (notification) => {
    const uri = notification.params?.uri;
    notifications.push(uri ? `${notification.method} ${uri}` : notification.method);
  };
  // Over HTTP, closing the client aborts its own GET stream, which it reports as an error.
  let closing = false;
  client.onerror = (error) => {
    if (!closing) transportErrors.push(String(error?.message ?? error));
  };

  const connected = await check("connect", async () => {
    await client.connect(transport);
    const server = client.getServerVersion();
    return `${server?.name} ${server?.version}`;
  });
  if (!connected) return;

  const session = { client, questions, notifications, saved: {}, called: new Set(), readSchemes: new Set(), tools: [], templates: [], prompts: [] };

  await check("capabilities", async () => {
    const capabilities = client.getServerCapabilities() ?? {};
    return "advertised " + ["tools", "resources", "prompts", "completions", "logging"].filter((name) => capabilities[name]).join(", ");
  });
  const loggingOn = await check("logging", async () => {
    if (!client.getServerCapabilities()?.logging) throw new Fail("the server does not advertise the `logging` capability");
    await client.setLoggingLevel("info");
    return "capability advertised, logging/setLevel info accepted";
  });

  const listed = await check("tools/list", async () => {
    session.tools = await allPages((params) => client.listTools(params), "tools");
    const withOutput = session.tools.filter((tool) => tool.outputSchema).length;
    return `${session.tools.length} tools (${withOutput} output schemas compiled by Ajv)`;
  });
  if (!listed) {
    // A host stops here with no tools at all. To still report what each call would do, take the
    // listing without the SDK's parsing and hand it to the SDK's own validator cache, so that
    // every structured result below is still checked against its output schema by Ajv.
    await check("tools/list (unparsed, to go on)", async () => {
      session.tools = await allPages((params) => client.request({ method: "tools/list", params }, ResultSchema), "tools");
      client.cacheToolMetadata(session.tools);
      return `${session.tools.length} tools; the calls below still validate against their output schemas`;
    });
  }
  await check("resources/list + read", async () => {
    const listed = await allPages((params) => client.listResources(params), "resources");
    for (const resource of listed) {
      await client.readResource({ uri: resource.uri });
      session.readSchemes.add(resource.uri.split("://")[0]);
    }
    return `${listed.length} resources, each read`;
  });
  await check("resources/templates/list", async () => {
    session.templates = await allPages((params) => client.listResourceTemplates(params), "resourceTemplates");
    return session.templates.map((template) => template.uriTemplate).join(", ");
  });
  await check("prompts/list", async () => {
    session.prompts = await allPages((params) => client.listPrompts(params), "prompts");
    return `${session.prompts.length} prompts`;
  });

  for (const step of scenario.steps) {
    if (step.read !== undefined) {
      await check(`resources/read ${step.read}`, async () => {
        const uri = substitute(step.read, session.saved);
        const text = contentsText(await client.readResource({ uri }));
        checkExpectations(step, undefined, text);
        session.readSchemes.add(uri.split("://")[0]);
        return `${text.length} characters`;
      });
      continue;
    }
    await check(`tools/call ${step.call}`, async () => {
      session.called.add(step.call);
      const argumentsNow = substitute(step.arguments, session.saved);
      const askedBefore = questions.length;
      const result = await client.callTool({ name: step.call, arguments: argumentsNow });
      const text = textOf(result);
      if (step.expectError) {
        if (!result.isError) throw new Fail(`expected a tool error, got a success: ${text.slice(0, 400)}`);
        checkExpectations(step, undefined, text);
        return `tool error as expected: ${text.slice(0, 120)}`;
      }
      if (result.isError) throw new Fail(`tool error: ${text.slice(0, 400)}`);
      const asked = questions.length - askedBefore;
      if (step.approval && asked === 0) throw new Fail("the server ran the call without asking for approval");
      if (!step.approval && asked > 0) throw new Fail(`the server asked for approval unexpectedly: ${questions.at(-1)}`);
      checkExpectations(step, result.structuredContent, text);
      if (step.save) session.saved[step.save] = result.structuredContent;
      let detail = `${text.length} characters of text`;
      if (result.structuredContent !== undefined) detail += `, ${JSON.stringify(result.structuredContent).length} characters of valid structured content`;
      if (asked) detail += `, approval asked ${asked}x and accepted`;
      return detail;
    });
  }

  await check("every tool called", async () => {
    const missing = session.tools.map((tool) => tool.name).filter((name) => !session.called.has(name)).sort();
    if (missing.length) throw new Fail(`listed but never called by scenario.json: ${missing.join(", ")}`);
    return `all ${session.tools.length} listed tools called`;
  });
  await check("every resource scheme read", async () => {
    const schemes = new Set(session.templates.map((template) => template.uriTemplate.split("://")[0]));
    const missing = [...schemes].filter((scheme) => !session.readSchemes.has(scheme)).sort();
    if (missing.length) throw new Fail(`resource schemes never read: ${missing.join(", ")}`);
    return "read " + [...session.readSchemes].sort().map((scheme) => `${scheme}://`).join(", ");
  });
  await check("list_changed after SkillSave", async () => {
    const wanted = ["notifications/resources/list_changed", "notifications/prompts/list_changed"];
    await waitFor(() => wanted.every((method) => notifications.includes(method)));
    const missing = wanted.filter((method) => !notifications.includes(method));
    if (missing.length) throw new Fail(`never received ${missing.join(", ")}`);
    return "resources and prompts list_changed received";
  });

  await check("prompts/list after SkillSave", async () => {
    session.prompts = await allPages((params) => client.listPrompts(params), "prompts");
    const names = session.prompts.map((prompt) => prompt.name);
    if (!names.includes("skill-interop-farewell")) {
      throw new Fail(`the saved skill's prompt \`skill-interop-farewell\` is not listed: ${names.join(", ")}`);
    }
    return `${names.length} prompts, the saved skill's included`;
  });
  for (const prompt of session.prompts) {
    await check(`prompts/get ${prompt.name}`, async () => {
      const argumentsNow = { ...(scenario.prompts[prompt.name] ?? {}) };
      for (const argument of prompt.arguments ?? []) {
        if (argument.required && !(argument.name in argumentsNow)) {
          throw new Fail(`scenario.json gives no value for the required argument \`${argument.name}\``);
        }
      }
      const result = await client.getPrompt({ name: prompt.name, arguments: argumentsNow });
      if (!result.messages.length) throw new Fail("no messages");
      return `${result.messages.length} message(s)`;
    });
  }

  await completions(session);

  await check("resources/updated after subscribe", async () => {
    const { uri, write } = scenario.subscription;
    const before = notifications.length;
    await client.subscribeResource({ uri });
    const result = await client.callTool({ name: write.call, arguments: write.arguments });
    if (result.isError) throw new Fail(`${write.call} failed: ${textOf(result)}`);
    const wanted = `notifications/resources/updated ${uri}`;
    if (!(await waitFor(() => notifications.slice(before).includes(wanted)))) {
      throw new Fail(`no ${wanted} within ${WAIT_MS / 1000} s of the write`);
    }
    await client.unsubscribeResource({ uri });
    return `resources/subscribe, ${write.call}, ${wanted}`;
  });
  if (loggingOn) {
    await check("notifications/message after logging/setLevel", async () => {
      const logged = () => notifications.filter((method) => method === "notifications/message").length;
      if (!(await waitFor(() => logged() > 0))) {
        throw new Fail("no notifications/message at level info, though SkillSave rescanned the skills");
      }
      return `${logged()} message(s)`;
    });
  }

  closing = true;
  await client.close();
  if (server) {
    // SIGTERM must end the server cleanly once the session is closed.
    const code = await new Promise((resolveCode) => {
      server.on("exit", (exitCode, signal) => resolveCode(exitCode ?? signal));
      server.kill("SIGTERM");
    });
    if (code === 0) ok("SIGTERM", "the server stopped cleanly");
    else fail("SIGTERM", `the server exited with ${code}`);
  }
  const log = serverLog.join("");
  const errors = log.split("\n").filter((line) => line.includes("panicked") || line.includes(" ERROR "));
  if (errors.length) fail("server log", `${errors.length} error line(s), first: ${errors[0]}`);
  if (transportErrors.length) {
    for (const error of transportErrors) fail("client error", error);
  } else {
    ok("client errors", "none");
  }
}

async function completions(session) {
  if (!session.client.getServerCapabilities()?.completions) {
    fail("completion/complete", "the server does not advertise `completions`");
    return;
  }
  const context = { name: "interop-greeting", group: "Agent", chat: String(session.saved.latest?.chatFile ?? "") };
  const complete = async (ref, name, contextArguments) => {
    const others = Object.fromEntries(Object.entries(contextArguments).filter(([key, value]) => key !== name && value));
    const request = { ref, argument: { name, value: "" } };
    if (Object.keys(others).length) request.context = { arguments: others };
    const { completion } = await session.client.complete(request);
    if (!completion.values.length) throw new Fail("no values offered for an empty prefix");
    const total = completion.total === undefined ? "" : ` of ${completion.total}`;
    return `${completion.values.length} value(s)${total}, e.g. ${JSON.stringify(completion.values[0])}`;
  };
  for (const template of session.templates) {
    for (const name of argumentNames(template.uriTemplate)) {
      await check(`completion/complete ${template.uriTemplate} ${name}`, () =>
        complete({ type: "ref/resource", uri: template.uriTemplate }, name, context));
    }
  }
  for (const prompt of session.prompts) {
    for (const argument of prompt.arguments ?? []) {
      await check(`completion/complete prompt ${prompt.name} ${argument.name}`, () =>
        complete({ type: "ref/prompt", name: prompt.name }, argument.name, {}));
    }
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.log(`FAIL ${LABEL}: the check itself crashed: ${error?.stack ?? error}`);
    process.exit(1);
  },
);
