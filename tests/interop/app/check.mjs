// The interop stage's MCP Apps check: a real host page (host.html, the postMessage protocol)
// in headless Chromium shows the workspace view read from the built binary, and every call the
// view makes goes to that binary over stdio through the official TypeScript SDK (this process
// is the bridge). It opens every view, filters and reads a variable, adds one from the form
// (the app-only AppWriteVar: typed USER_ADD), edits a state path through
// WriteState with the user's approval (the config asks every time), jumps to a chat's floor and
// reads the diff its message made, and switches the theme.
//
//     node app/check.mjs --binary target/debug/synapse-mcp [--screenshots docs/screenshots]
//     node app/check.mjs --binary target/debug/synapse-mcp --bench 1000
//
// --bench N stores N variables and prints how long opening the variables view takes (a
// measurement for BENCHMARKS.md, not a check). Chromium comes from Debian (/usr/bin/chromium,
// or CHROMIUM=path); one line per check, any failure exits 1.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { chromium } from "playwright-core";

const HERE = dirname(fileURLToPath(import.meta.url));
const REPOSITORY = resolve(HERE, "..", "..", "..");
const LABEL = "app/chromium";
const VIEW = "ui://synapse/workspace";
const MIME = "text/html;profile=mcp-app";
const WAIT_MS = 15_000;

const { values: options } = parseArgs({
  options: {
    binary: { type: "string" },
    screenshots: { type: "string" },
    bench: { type: "string" },
  },
});
if (!options.binary) {
  console.error("usage: node app/check.mjs --binary PATH [--screenshots DIR] [--bench N]");
  process.exit(2);
}

class Fail extends Error {}
let passed = 0;
const failed = [];
async function check(name, body) {
  try {
    const detail = await body();
    passed += 1;
    console.log(`ok   ${LABEL} ${name}${detail ? `: ${detail}` : ""}`);
    return true;
  } catch (error) {
    failed.push(name);
    console.log(`FAIL ${LABEL} ${name}: ${String(error?.message ?? error).split(/\s+/).join(" ").slice(0, 600)}`);
    return false;
  }
}

// ---- The server, over stdio ------------------------------------------------------------------
const work = mkdtempSync(join(tmpdir(), "synapse-app-"));
const config = join(work, "config.toml");
writeFileSync(config, '[groups]\nsnapshots = true\n\n[tools.WriteState]\nexecution = "ask-always"\n');
const transport = new StdioClientTransport({
  command: resolve(options.binary),
  args: ["--store", "memory", "--config", config, "--log-level", "warn"],
  env: { ...process.env, HOME: work },
  stderr: "inherit",
});
const client = new Client(
  { name: "synapse-interop-app-host", version: "1.0.0" },
  {
    capabilities: {
      elicitation: { form: {} },
      extensions: { "io.modelcontextprotocol/ui": { mimeTypes: [MIME] } },
    },
  },
);
const questions = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  questions.push(request.params.message);
  return { action: "accept", content: { approve: true, reason: "approved in the app check" } };
});
await client.connect(transport);

async function call(name, args) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) throw new Fail(`${name}: ${JSON.stringify(result.content)}`);
  return result;
}

// ---- The browser -------------------------------------------------------------------------------
// Playwright's persistent context is a fresh --user-data-dir (it passes the flag itself).
const browser = await chromium.launchPersistentContext(join(work, "profile"), {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1040, height: 600 },
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});

async function openHost(theme, page) {
  page ??= await browser.newPage();
  // The page must never reach the network: any request but the host page itself fails the check.
  const requests = [];
  page.on("request", (request) => {
    if (!request.url().startsWith("file:") && !request.url().startsWith("about:")) requests.push(request.url());
  });
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await page.exposeFunction("mcp", async (method, params) => {
    if (method === "tools/call") return client.callTool(params);
    if (method === "resources/read") return client.readResource(params);
    throw new Error(`not forwarded: ${method}`);
  });
  await page.goto(`${pathToFileURL(join(HERE, "host.html"))}?theme=${theme}`);
  return { page, requests, errors };
}

async function showView(page, html, tool = "ListVars", args = {}) {
  const opened = await call(tool, args);
  const started = Date.now();
  await page.evaluate(([html, opened, args]) => window.openView(html, { arguments: args, result: opened }), [html, opened, args]);
  const frame = await appFrame(page);
  await frame.waitForFunction(() => window.__workspaceReady === true, null, { timeout: WAIT_MS });
  await frame.waitForSelector(".row", { timeout: WAIT_MS }).catch(() => {});
  return { frame, milliseconds: Date.now() - started };
}

async function appFrame(page) {
  const handle = await page.waitForSelector("#app");
  for (let tries = 0; tries < 100; tries++) {
    const frame = await handle.contentFrame();
    if (frame && frame.url() !== "about:blank" || tries > 50) return frame;
    await page.waitForTimeout(20);
  }
  return handle.contentFrame();
}

let html = "";
try {
  await check("resource", async () => {
    const read = await client.readResource({ uri: VIEW });
    const contents = read.contents[0];
    if (contents.mimeType !== MIME) throw new Fail(`MIME type ${contents.mimeType}`);
    const csp = contents._meta?.ui?.csp;
    if (JSON.stringify(csp) !== JSON.stringify({ connectDomains: [], resourceDomains: [] })) throw new Fail(`CSP ${JSON.stringify(csp)}`);
    html = contents.text;
    if (html.length >= 300_000) throw new Fail(`${html.length} bytes, over 300 KB`);
    const tools = (await client.listTools()).tools.filter((tool) => tool._meta?.ui?.resourceUri === VIEW);
    return `${html.length} bytes, opened by ${tools.map((tool) => tool.name).join(", ")}`;
  });

  if (options.bench) await bench(Number(options.bench));
  else await checks();
} finally {
  await browser.close();
  await client.close();
  rmSync(work, { recursive: true, force: true });
}

async function checks() {
  await call("WriteVar", { name: "notes/report", value: "Draft: the quarterly report is due on Friday; Lin reviews the figures.\n".repeat(60), desc: "The quarterly report draft", tags: ["work"] });
  await call("WriteVar", { name: "notes/groceries", value: "Rice, tofu, green tea.", tags: ["home"] });
  await call("WriteVar", { name: "plans/weekly", value: { steps: [{ _tool: "ReadVar", name: "notes/report" }] }, desc: "A stored plan", tags: ["work", "plan"] });
  for (let index = 0; index < 120; index++) {
    await call("WriteVar", { name: `bulk/item-${String(index).padStart(3, "0")}`, value: `value ${index}`, tags: ["bulk"] });
  }
  await call("WriteState", { path: "project", value: { name: "Synapse", status: "draft", owners: ["Lin", "Ana"], budget: { limit: 1200, spent: 310.5 } } });
  await call("WriteState", { path: "user", value: { name: "Lin", language: "zh" } });
  const chat = JSON.parse(readFileSync(join(REPOSITORY, "examples", "sillytavern_chat.json"), "utf8"));
  await call("SnapshotProcess", chat);
  // A chat of 80 replies, each adding a coin: more floors than one page of SnapshotList.
  const longChat = {
    chatFile: "long-chat",
    characterId: "counter",
    template: { 金币: 0 },
    messages: Array.from({ length: 80 }, (_, index) => ({ is_user: false, mes: `第${index}回 @.ADD("金币", 1);`, swipe_id: 0, swipes: [`第${index}回 @.ADD("金币", 1);`], swipes_info: [{}] })),
  };
  await call("SnapshotProcess", longChat);
  await call("FunctionUpsert", {
    function: {
      name: "HEAL", type: "active", description: "Heal: adds hit points",
      pattern: "@\\.HEAL\\((\\d+)\\);?",
      executor: "_.set(snapshot, '角色.生命值', _.get(snapshot, '角色.生命值', 0) + Number(args[0])); return snapshot;",
    },
  });
  const approvalsBefore = questions.length;

  for (const theme of ["light", "dark"]) {
    // The floors tools cache their results as variables, so the count grows between themes.
    const stored = (await call("ListVars", { cached: true, _outputLimit: 0 })).structuredContent.count;
    const { page, requests, errors } = await openHost(theme);
    let frame;
    // A click, then the status line it ends with (emptied first: the last one may say the same).
    const press = async (selector, text) => {
      await frame.evaluate(() => { document.getElementById("status").textContent = ""; });
      await frame.click(selector);
      await frame.waitForFunction((text) => document.getElementById("status").textContent.startsWith(text), text, { timeout: WAIT_MS })
        .catch(async () => { throw new Fail(`waiting for "${text}" after ${selector}, the status says: ${await frame.textContent("#status")}`); });
    };
    await check(`${theme}: initialize`, async () => {
      ({ frame } = await showView(page, html));
      const log = await page.evaluate(() => window.hostLog);
      const initialize = log.find((entry) => entry.method === "ui/initialize");
      if (initialize?.params?.protocolVersion !== "2026-01-26") throw new Fail(`ui/initialize ${JSON.stringify(initialize)}`);
      if (!log.some((entry) => entry.method === "ui/notifications/initialized")) throw new Fail("no ui/notifications/initialized");
      const shown = await frame.evaluate(() => document.documentElement.dataset.theme);
      if (shown !== theme) throw new Fail(`the view shows the ${shown} theme`);
      return `protocol ${initialize.params.protocolVersion}, theme ${shown}`;
    });
    if (!frame) continue;

    await check(`${theme}: variables listed, virtualised`, async () => {
      const count = await frame.textContent("#count");
      const rows = await frame.locator(".row").count();
      if (!count.startsWith(`${stored} `)) throw new Fail(`count ${count}, ${stored} stored`);
      if (rows >= 60) throw new Fail(`${rows} rows in the document for ${stored} variables`);
      return `${count}, ${rows} rows rendered`;
    });

    await check(`${theme}: search, tag filter and a value read by keyboard`, async () => {
      await frame.fill("#search", "report");
      await frame.waitForFunction(() => document.getElementById("count").textContent.startsWith("1 "), null, { timeout: WAIT_MS });
      await frame.fill("#search", "");
      await frame.waitForFunction((stored) => document.getElementById("count").textContent.startsWith(`${stored} `), stored, { timeout: WAIT_MS });
      await frame.selectOption("#tag", "work");
      await frame.waitForFunction(() => document.getElementById("count").textContent.startsWith("2 "), null, { timeout: WAIT_MS });
      await frame.focus("#list");
      await page.keyboard.press("Home");
      await frame.waitForSelector("#detail pre", { timeout: WAIT_MS });
      const heading = await frame.textContent("#detail h2");
      const window_ = await frame.textContent("#detail .hint");
      if (heading !== "notes/report" || !window_.includes("characters 0–2000")) throw new Fail(`${heading}: ${window_}`);
      await frame.click("text=Next window");
      await frame.waitForFunction(() => document.querySelector("#detail .hint").textContent.includes("2000–4000"), null, { timeout: WAIT_MS });
      await frame.click("text=Copy $VAR_REF");
      const status = await frame.textContent("#status");
      if (status !== "Copied $VAR_REF{{notes/report}}") throw new Fail(`status ${status}`);
      return `${heading}, read in windows, ${status}`;
    });
    if (options.screenshots) {
      await check(`${theme}: screenshot of the variables`, async () => {
        await frame.click("text=Previous window");
        await frame.waitForFunction(() => document.querySelector("#detail .hint").textContent.includes("0–2000"), null, { timeout: WAIT_MS });
        await page.screenshot({ path: join(options.screenshots, `variables-${theme}.png`) });
      });
    }

    await check(`${theme}: a new variable from the form, stored as the person's (USER_ADD) through the app-only AppWriteVar`, async () => {
      const listedTool = (await client.listTools()).tools.find((tool) => tool.name === "AppWriteVar");
      if (JSON.stringify(listedTool?._meta?.ui?.visibility) !== '["app"]') throw new Fail(`AppWriteVar listed as ${JSON.stringify(listedTool)}`);
      const name = `from-you/${theme}`;
      const value = `Written in the ${theme} view: $VAR_REF{{notes/report}} stays as typed.\nSecond line.`;
      await frame.click("#add-variable");
      // A bad name first: the server's error shows, the form keeps what was typed, nothing is stored.
      await frame.fill("#new-name", "bad{name");
      await frame.fill("#new-value", value);
      await frame.fill("#new-tags", "mine, typed");
      await press("#save-variable", "invalid variable name `bad{name`");
      const refused = await frame.textContent("#status");
      if (!(await frame.isVisible("#new-variable")) || (await frame.inputValue("#new-value")) !== value) throw new Fail("the form lost what was typed");
      if (options.screenshots) await page.screenshot({ path: join(options.screenshots, `new-variable-${theme}.png`) });
      await frame.fill("#new-name", name);
      await press("#save-variable", `Wrote ${name} (USER_ADD, `);
      const listed = (await call("ListVars", { filter: { search: "from-you" } })).structuredContent.variables;
      const stored = listed.find((variable) => variable.name === name);
      if (stored?.type !== "USER_ADD" || JSON.stringify(stored.tags) !== '["mine","typed"]') throw new Fail(`ListVars: ${JSON.stringify(listed)}`);
      const read = (await call("ReadVar", { name })).content[0].text;
      if (read.slice(read.indexOf("\n") + 1) !== value) throw new Fail(`ReadVar: ${read}`);
      const shown = [await frame.textContent("#detail h2"), await frame.textContent("#detail dd")];
      if (shown.join(" ") !== `${name} USER_ADD` || !(await frame.isHidden("#new-variable"))) throw new Fail(`the view shows ${shown.join(" ")}`);
      return `refused first: ${refused.slice(0, 60)}…; then ${await frame.textContent("#status")}; ListVars: ${stored.type}, tags ${stored.tags.join(", ")}; the view shows it`;
    });

    await check(`${theme}: state tree, a path edited through WriteState`, async () => {
      await frame.click("#tab-state");
      await frame.waitForSelector('.node[data-path="project.status"]', { timeout: WAIT_MS });
      const value = theme === "light" ? "review" : "published";
      await frame.focus('.node[data-path="project.status"]');
      await page.keyboard.press("Enter");
      await frame.fill(".tree input", JSON.stringify(value));
      await page.keyboard.press("Enter");
      await frame.waitForFunction((value) => document.getElementById("status").textContent === "Wrote project.status", value, { timeout: WAIT_MS });
      const read = await call("ReadState", { path: "project.status" });
      if (!read.content[0].text.includes(`"${value}"`)) throw new Fail(`ReadState says ${read.content[0].text}`);
      if (questions.length <= approvalsBefore) throw new Fail("WriteState ran without asking the user");
      return `project.status = "${value}", approval asked ${questions.length - approvalsBefore}x`;
    });
    if (options.screenshots) {
      await check(`${theme}: screenshot of the state`, () => page.screenshot({ path: join(options.screenshots, `state-${theme}.png`) }).then(() => ""));
    }

    await check(`${theme}: a chat's floors, a jump to a floor and the diff its message made`, async () => {
      await frame.click("#tab-floors");
      await frame.fill("#chat", chat.chatFile);
      await frame.fill("#jump", "2");
      await frame.press("#jump", "Enter");
      await frame.waitForSelector(".patch li", { timeout: WAIT_MS });
      const count = await frame.textContent("#floor-count");
      const heading = await frame.textContent("#floor h2");
      const operations = await frame.locator(".patch li").allTextContents();
      if (!heading.startsWith("Message 2") || !operations.length) throw new Fail(`${heading}: ${operations.join("; ")}`);
      return `${count}; ${heading}: ${operations.length} operations, first ${operations[0]}`;
    });
    if (options.screenshots) {
      await check(`${theme}: screenshot of the floors`, () => page.screenshot({ path: join(options.screenshots, `floors-${theme}.png`) }).then(() => ""));
    }
    await check(`${theme}: a long chat's floors a page at a time, the diff across pages`, async () => {
      await frame.fill("#chat", longChat.chatFile);
      await frame.fill("#jump", "");
      await frame.click("#show-floors");
      await frame.waitForFunction(() => document.getElementById("floor-count").textContent.includes("of 80"), null, { timeout: WAIT_MS });
      const newest = await frame.textContent("#floor-count");
      if (newest !== "floors 51–80 of 80" || !(await frame.isDisabled("#later-floors"))) throw new Fail(`newest page: ${newest}`);
      await frame.click("#earlier-floors");
      await frame.waitForFunction(() => document.getElementById("floor-count").textContent.startsWith("floors 21–"), null, { timeout: WAIT_MS });
      await frame.click("#floors .row >> nth=0");
      await frame.waitForFunction(() => document.querySelector("#floor h2")?.textContent === "Message 20", null, { timeout: WAIT_MS });
      await frame.waitForSelector(".patch li", { timeout: WAIT_MS });
      const operations = await frame.locator(".patch li").allTextContents();
      if (operations.join("; ") !== "replace/金币 = 21") throw new Fail(`message 20 against the page before: ${operations.join("; ")}`);
      return `newest ${newest}, then ${await frame.textContent("#floor-count")}; message 20: ${operations[0]}`;
    });

    await check(`${theme}: the function library and a live pattern tester`, async () => {
      await frame.click("#tab-functions");
      await frame.waitForSelector("#functions .row", { timeout: WAIT_MS });
      await frame.click('#functions .row:has-text("HEAL")');
      await frame.fill("#start-state", '{"角色": {"生命值": 80}}');
      await frame.fill("#reply", "林喝下药水。@.HEAL(5);");
      const healed = (hp) => frame.waitForFunction((hp) => document.getElementById("tested-state").textContent.includes(`"生命值": ${hp}`), hp, { timeout: WAIT_MS });
      await healed(85);
      // An unsaved pattern: the reply's call no longer matches, then a reply that does.
      await frame.fill("#pattern", "@\\.CURE\\((\\d+)\\);?");
      await healed(80);
      await frame.fill("#reply", "林喝下药水。@.CURE(7);");
      await healed(87);
      const steps = await frame.locator("#steps li").allTextContents();
      const stored = (await call("FunctionList", {})).structuredContent.global.find((fn) => fn.name === "HEAL");
      if (!stored.pattern.includes("HEAL")) throw new Fail(`the tester stored its draft: ${stored.pattern}`);
      return `HEAL(5) → 85; the draft pattern CURE: HEAL(5) → 80, CURE(7) → 87 (${steps.join("; ")}); nothing stored`;
    });
    await check(`${theme}: the library changed from the view: a pattern saved, switched off and on, a function deleted`, async () => {
      const stored = async (name) => (await call("FunctionList", {})).structuredContent.global.find((fn) => fn.name === name);
      const asked = questions.length;
      await frame.click('#functions .row:has-text("HEAL")');
      const original = (await stored("HEAL")).pattern;
      await frame.fill("#pattern", "@\\.CURE\\((\\d+)\\);?");
      await press("#save-function", "Saved HEAL");
      if ((await stored("HEAL")).pattern !== "@\\.CURE\\((\\d+)\\);?") throw new Fail(`the pattern was not saved: ${(await stored("HEAL")).pattern}`);
      await frame.click('#functions .row:has-text("HEAL")');
      await frame.fill("#pattern", original);
      await press("#save-function", "Saved HEAL");
      await frame.click('#functions .row:has-text("HEAL")');
      await press("#toggle-function", "HEAL off");
      const off = (await stored("HEAL")).enabled;
      await frame.click('#functions .row:has-text("HEAL")');
      await press("#toggle-function", "HEAL on");
      const name = `SCRATCH_${theme.toUpperCase()}`;
      await call("FunctionUpsert", { function: { name, type: "active", pattern: `@\\.${name}\\(\\);`, executor: "return snapshot;" } });
      await frame.click("#show-functions");
      await frame.click(`#functions .row:has-text("${name}")`);
      await press("#delete-function", `Deleted ${name}`);
      if (off !== false || (await stored("HEAL")).enabled !== true || (await stored("HEAL")).pattern !== original || (await stored(name))) {
        throw new Fail(`off ${off}, HEAL ${JSON.stringify(await stored("HEAL"))}, ${name} ${JSON.stringify(await stored(name))}`);
      }
      return `HEAL's pattern saved and restored, switched off and on, ${name} deleted; the user was asked ${questions.length - asked}x`;
    });
    await check(`${theme}: a floor saved as a global snapshot from the view`, async () => {
      await frame.click("#tab-floors");
      await frame.fill("#chat", chat.chatFile);
      await frame.fill("#jump", "2");
      await frame.press("#jump", "Enter");
      await frame.waitForFunction(() => document.querySelector("#floor h2")?.textContent === "Message 2, swipe 1" && document.getElementById("save-global"), null, { timeout: WAIT_MS });
      await frame.fill("#global-label", `floor-${theme}`);
      await frame.click("#save-global");
      await frame.waitForFunction((text) => document.getElementById("status").textContent === text, `Saved as the global snapshot floor-${theme}`, { timeout: WAIT_MS })
        .catch(async () => { throw new Fail(`status: ${await frame.textContent("#status")}; heading: ${await frame.textContent("#floor h2")}`); });
      const globals = (await call("SnapshotGlobalList", {})).structuredContent.globals;
      if (!globals.some((global) => global.label === `floor-${theme}`)) throw new Fail(`no global floor-${theme}: ${JSON.stringify(globals)}`);
      await frame.click("#tab-functions");
      return `floor-${theme} listed by SnapshotGlobalList`;
    });
    await check(`${theme}: a floor's state read, edited, exported, imported with MVU's metadata stripped, and the chat reprocessed from it`, async () => {
      const stored = async (id) => (await call("SnapshotGet", { id, _outputLimit: -1 })).structuredContent.snapshot;
      await frame.click("#tab-floors");
      await frame.fill("#chat", chat.chatFile);
      // Message 0 first: the check before left message 2 on show, whose state must not be read.
      for (const [message, heading] of [["0", "Message 0"], ["2", "Message 2, swipe 1"]]) {
        await frame.fill("#jump", message);
        await frame.press("#jump", "Enter");
        await frame.waitForFunction((heading) => document.querySelector("#floor h2")?.textContent === heading && document.getElementById("floor-state")?.value, heading, { timeout: WAIT_MS });
      }
      const id = await frame.textContent("#floor dd");
      const shown = JSON.parse(await frame.inputValue("#floor-state"));
      if (JSON.stringify(shown) !== JSON.stringify(await stored(id))) throw new Fail(`the view shows ${JSON.stringify(shown)}`);
      const asked = questions.length;
      await frame.fill("#floor-state", JSON.stringify({ ...shown, 笔记: `edited in ${theme}` }));
      await press("#save-floor", "Saved the edit");
      if ((await stored(id)).笔记 !== `edited in ${theme}`) throw new Fail(`not saved: ${JSON.stringify(await stored(id))}`);
      await frame.click("#export-floor");
      await frame.waitForFunction(() => document.getElementById("floor-io").value, null, { timeout: WAIT_MS });
      const exported = JSON.parse(await frame.inputValue("#floor-io"));
      if (JSON.stringify(exported) !== JSON.stringify(await stored(id))) throw new Fail(`exported ${JSON.stringify(exported)}`);
      await frame.fill("#floor-io", JSON.stringify({ ...exported, 天气: "雾", $meta: { extensible: true } }));
      await press("#import-floor", "Imported into the floor");
      const imported = await stored(id);
      if (imported.天气 !== "雾" || "$meta" in imported) throw new Fail(`imported ${JSON.stringify(imported)}`);
      const { floors: before } = (await call("SnapshotList", { chatFile: chat.chatFile, _outputLimit: -1 })).structuredContent;
      await frame.click("#reprocess-floor summary");
      // The chat file as SillyTavern keeps it: a metadata line, then each message with the
      // snapshot ids SnapshotProcess bound in its swipes' `swipes_info`.
      const bound = structuredClone(chat.messages);
      for (const floor of before) {
        const message = bound[floor.messageIndex];
        message.swipes_info ??= [];
        message.swipes_info[floor.swipeId ?? 0] = { ...message.swipes_info[floor.swipeId ?? 0], st_var_system_snapshot_id: floor.snapshotId };
      }
      const file = [{ user_name: "林", character_name: "艾拉", chat_metadata: {} }, ...bound].map((line) => JSON.stringify(line)).join("\n");
      await frame.fill("#reprocess-messages", file);
      await frame.fill("#reprocess-character", chat.characterId);
      await press("#reprocess", "Reprocessed from message 2");
      const { floors: after } = (await call("SnapshotList", { chatFile: chat.chatFile, _outputLimit: -1 })).structuredContent;
      const at = (floors, index) => floors.filter((floor) => floor.messageIndex >= index).map((floor) => floor.snapshotId);
      const rebuilt = await stored(at(after, 2)[0]);
      const gone = await client.callTool({ name: "SnapshotGet", arguments: { id } });
      if (at(after, 2).some((fresh) => at(before, 2).includes(fresh)) || JSON.stringify(at(after, 0).slice(0, 1)) !== JSON.stringify(at(before, 0).slice(0, 1))
        || "笔记" in rebuilt || "天气" in rebuilt || rebuilt.角色?.生命值 === undefined || !gone.isError) {
        throw new Fail(`before ${JSON.stringify(before)}, after ${JSON.stringify(after)}, rebuilt ${JSON.stringify(rebuilt)}, the old one ${JSON.stringify(gone.content)}`);
      }
      return `read ${Object.keys(shown).length} keys, saved an edit, exported it, imported a state and $meta was stripped; reprocessed from message 2 (a chat file pasted): ${at(after, 2).length} floors rebuilt from message 0's, built on message 0's state, the edit gone with the old snapshot; the user was asked ${questions.length - asked}x`;
    });
    await check(`${theme}: the library managed from the view: a function added and edited in every field, run earlier and later, moved to a character and back, the library exported and imported`, async () => {
      const character = `hero-${theme}`;
      const library = async (characterId) => {
        const listed = (await call("FunctionList", characterId ? { characterId, _outputLimit: -1 } : { _outputLimit: -1 })).structuredContent;
        return [...(characterId ? listed.local : listed.global)].sort((a, b) => a.order - b.order);
      };
      const name = `TRIPLE_${theme.toUpperCase()}`;
      const choose = (fn) => frame.click(`#functions .row:has(.name:text-is("${fn}"))`);
      await frame.click("#tab-functions");
      await frame.fill("#character", character);
      await frame.click("#show-functions");
      await frame.waitForSelector("#functions .row", { timeout: WAIT_MS });
      await frame.click("#function-fields summary");
      await frame.click("#new-function");
      const fresh = JSON.parse(await frame.inputValue("#function-json"));
      await frame.fill("#function-json", JSON.stringify({ ...fresh, name, description: "Triples a number", pattern: `@\\.${name}\\("([^"]+)"\\);`, executor: "_.set(snapshot, args[0], (_.get(snapshot, args[0]) || 0) * 3); return snapshot;" }));
      await press("#save-function-json", `Saved ${name}`);
      let added = (await library()).find((fn) => fn.name === name);
      if (!added || added.description !== "Triples a number" || !added.executor.includes("* 3")) throw new Fail(`added ${JSON.stringify(added)}`);
      await choose(name);
      const editing = JSON.parse(await frame.inputValue("#function-json"));
      await frame.fill("#function-json", JSON.stringify({ ...editing, description: "Triples, then adds one", pattern: `${editing.pattern}?`, executor: "_.set(snapshot, args[0], (_.get(snapshot, args[0]) || 0) * 3 + 1); return snapshot;" }));
      await press("#save-function-json", `Saved ${name}`);
      const edited = (await library()).find((fn) => fn.name === name);
      if (edited.id !== added.id || edited.description !== "Triples, then adds one" || !edited.executor.includes("+ 1") || !edited.pattern.endsWith(";?")) throw new Fail(`edited ${JSON.stringify(edited)}`);
      const place = async () => (await library()).findIndex((fn) => fn.name === name);
      // A new function runs at order 0: first, once a library has been put in order.
      const first = await place();
      const steps = first === 0 ? [["later", 1], ["earlier", 0]] : [["earlier", first - 1], ["later", first]];
      await choose(name);
      const places = [];
      for (const [way, expected] of steps) {
        await press(`#function-${way}`, `${name} runs ${way}`);
        places.push(await place());
        if (places.at(-1) !== expected) throw new Fail(`at ${first}, then ${places.join(", ")}: ${way} should be ${expected}`);
      }
      await choose(name);
      await press("#move-function", `Moved ${name} to ${character}'s library`);
      const moved = (await library(character)).find((fn) => fn.name === name);
      if (!moved || (await library()).some((fn) => fn.name === name)) throw new Fail(`moved: ${JSON.stringify(moved)}`);
      await choose(name);
      await press("#move-function", `Moved ${name} to the global library`);
      if ((await library(character)).some((fn) => fn.name === name) || !(await library()).some((fn) => fn.name === name)) throw new Fail("not moved back");
      await frame.click("#function-exchange summary");
      await frame.selectOption("#library-scope", "global");
      await press("#export-functions", "Exported");
      const exported = JSON.parse(await frame.inputValue("#functions-io"));
      const names = exported.functions.map((fn) => fn.name);
      if (!names.includes(name) || !names.includes("HEAL") || exported.functions.some((fn) => fn.builtin)) throw new Fail(`exported ${names.join(", ")}`);
      await frame.selectOption("#library-scope", "character");
      await press("#import-functions", `Imported ${names.length} functions`);
      const imported = (await library(character)).filter((fn) => names.includes(fn.name));
      if (imported.length !== names.length || imported.some((fn) => fn.enabled)) throw new Fail(`imported ${JSON.stringify(imported)}`);
      for (const fn of imported) await call("FunctionRemove", { id: fn.id, characterId: character });
      await call("FunctionRemove", { id: edited.id });
      await frame.fill("#character", "");
      await frame.click("#show-functions");
      return `${name} added and edited (description, pattern, executor), run ${steps[0][0]} and back (from place ${first}), moved to ${character} and back, ${names.length} exported (${names.join(", ")}) and imported into ${character}, switched off`;
    });
    if (options.screenshots) {
      await check(`${theme}: screenshot of the functions`, () => page.screenshot({ path: join(options.screenshots, `functions-${theme}.png`) }).then(() => ""));
    }

    await check(`${theme}: a plan's trace, opened by RunPlan`, async () => {
      const plan = {
        steps: [
          { _id: "note", _tool: "ReadVar", name: "notes/groceries", _outputPath: `†state.plan.note-${theme}` },
          { _id: "copy", _tool: "WriteVar", name: `plan/copy-${theme}`, value: "†steps.note" },
          // A cached tool: its trace names the variable holding its result.
          { _id: "library", _tool: "FunctionList" },
        ],
      };
      ({ frame } = await showView(page, html, "RunPlan", plan));
      await frame.waitForSelector("#plan-steps li", { timeout: WAIT_MS });
      const summary = await frame.textContent("#plan-summary");
      const steps = await frame.locator("#plan-steps > li").count();
      const changes = await frame.locator("#plan-changes li").allTextContents();
      if (!summary.startsWith("Succeeded: 3 steps") || steps !== 3 || !changes.some((change) => change.includes("state.plan"))) {
        throw new Fail(`${summary}; ${steps} steps; ${changes.join("; ")}`);
      }
      if (options.screenshots) await page.screenshot({ path: join(options.screenshots, `plan-${theme}.png`) });
      const link = frame.locator("#plan-steps .link").first();
      const variable = await link.textContent();
      await link.click();
      await frame.waitForFunction((name) => document.querySelector("#detail h2")?.textContent === name, variable, { timeout: WAIT_MS });
      return `${summary}; ${changes.join("; ")}; its result variable opened`;
    });

    await check(`${theme}: the tool-chain log, newest first, each result a click away`, async () => {
      const served = JSON.parse((await client.readResource({ uri: "log://calls" })).contents[0].text).calls;
      if (!served.length) throw new Fail("log://calls is empty after the plan's cached call");
      await frame.click("#tab-calls");
      await frame.waitForSelector("#calls li", { timeout: WAIT_MS });
      const shown = await frame.locator("#calls > li > .name").allTextContents();
      const tools = served.map((entry) => entry.tool);
      if (JSON.stringify(shown) !== JSON.stringify(tools)) throw new Fail(`shown ${JSON.stringify(shown)}, served ${JSON.stringify(tools)}`);
      if (options.screenshots) await page.screenshot({ path: join(options.screenshots, `calls-${theme}.png`) });
      await frame.locator("#calls .link").first().click();
      await frame.waitForFunction((name) => document.querySelector("#detail h2")?.textContent === name, served[0].resultVariable, { timeout: WAIT_MS });
      return `${shown.length} calls (${[...new Set(shown)].join(", ")}); the newest one's result, ${served[0].resultVariable}, opened`;
    });

    await check(`${theme}: opened by SnapshotList, the page handed over is drawn; a cut page is asked for whole`, async () => {
      const ownCalls = async (from) => (await page.evaluate(() => window.hostLog)).slice(from)
        .filter((entry) => entry.method === "tools/call" && entry.params?.name === "SnapshotList").length;
      const drawn = async (args) => {
        const from = (await page.evaluate(() => window.hostLog)).length;
        ({ frame } = await showView(page, html, "SnapshotList", args));
        await frame.waitForFunction(() => document.getElementById("floor-count").textContent === "floors 51–80 of 80", null, { timeout: WAIT_MS });
        return ownCalls(from);
      };
      const whole = await drawn({ chatFile: longChat.chatFile });
      if (whole !== 0) throw new Fail(`the view called SnapshotList ${whole}x for a page it was handed whole`);
      const cut = await drawn({ chatFile: longChat.chatFile, _outputLimit: 1500 });
      if (cut !== 1) throw new Fail(`the view called SnapshotList ${cut}x for a page the output limit cut`);
      return "the whole page drawn with no call of its own; the cut one asked for once";
    });

    await check(`${theme}: host context changes and display modes`, async () => {
      const other = theme === "light" ? "dark" : "light";
      await page.evaluate((other) => window.setTheme(other), other);
      await frame.waitForFunction((other) => document.documentElement.dataset.theme === other, other, { timeout: WAIT_MS });
      await page.evaluate((theme) => window.setTheme(theme), theme);
      await frame.click("#fullscreen");
      await frame.waitForFunction(() => document.getElementById("fullscreen").textContent === "Exit full screen", null, { timeout: WAIT_MS });
      await frame.click("#fullscreen");
      return `theme followed to ${other} and back, full screen and back`;
    });

    await check(`${theme}: no network, no script errors`, async () => {
      if (requests.length) throw new Fail(`requests: ${requests.join(", ")}`);
      if (errors.length) throw new Fail(`errors: ${errors.join("; ")}`);
      return "";
    });
    await page.close();
  }

  await check("the snapshot tools off: the floors tab offers to turn them on", async () => {
    await call("ToolGroups", { action: "disable", group: "snapshots" });
    const { page } = await openHost("light");
    const { frame } = await showView(page, html);
    await frame.click("#tab-floors");
    await frame.fill("#chat", chat.chatFile);
    await frame.click("#show-floors");
    await frame.waitForSelector("#turn-on:not([hidden])", { timeout: WAIT_MS });
    const said = await frame.textContent("#status");
    if (!said.includes("snapshots group")) throw new Fail(`the status says: ${said}`);
    const asked = questions.length;
    await frame.click("#turn-on");
    await frame.waitForSelector("#view-floors .row", { timeout: WAIT_MS });
    const groups = (await call("ToolGroups", {})).structuredContent.groups;
    const snapshots = groups.find((group) => group.name === "snapshots");
    if (!snapshots?.enabled) throw new Fail("the snapshots group is still off");
    await page.close();
    return `"${said}"; turned on (approved ${questions.length - asked}x), the floors drawn`;
  });
  console.log(`${LABEL}: ${passed} passed, ${failed.length} failed`);
  if (failed.length) process.exitCode = 1;
}

// Opening the variables view with `count` variables: from the page handed to the iframe until the
// list is drawn (ui/initialize, ListVars through the host, the first rows), five times.
async function bench(count) {
  for (let index = 0; index < count; index++) {
    await call("WriteVar", { name: `bench/variable-${String(index).padStart(5, "0")}`, value: `value ${index} `.repeat(20), desc: `Variable number ${index}`, tags: [`tag-${index % 7}`] });
  }
  const times = [];
  const drawn = [];
  for (let run = 0; run < 5; run++) {
    const { page } = await openHost("light");
    const { frame, milliseconds } = await showView(page, html);
    times.push(milliseconds);
    // In the page itself: from the page handed to the iframe to the first rows drawn, without
    // this process's polling.
    const openedAt = await page.evaluate(() => window.openedAt);
    const milestones = await frame.evaluate(() => window.__milestones);
    drawn.push(Object.fromEntries(Object.entries(milestones).map(([name, at]) => [name, Math.round(at - openedAt)])));
    const rows = await frame.locator(".row").count();
    const shown = await frame.textContent("#count");
    if (run === 0) console.log(`bench: ${shown}, ${rows} rows in the document`);
    await page.close();
  }
  times.sort((a, b) => a - b);
  const median = (name) => drawn.map((run) => run[name]).sort((a, b) => a - b)[2];
  const direct = [];
  for (let run = 0; run < 5; run++) {
    const started = Date.now();
    await call("ListVars", { cached: true, _outputLimit: 0 });
    direct.push(Date.now() - started);
  }
  direct.sort((a, b) => a - b);
  console.log(`bench: ListVars alone (the same list, straight from this process): median ${direct[2]} ms`);
  console.log(`bench: opening the variables view with ${count} variables, in the page (handed over → first rows drawn): median ${median("rows")} ms (runs ${drawn.map((run) => run.rows).join(", ")} ms); medians of the steps: script started ${median("script")} ms, initialized ${median("initialized")} ms, the tool result came ${median("result")} ms`);
  console.log(`bench: the same as this process sees it (its polling included, until the view's own ListVars answered): median ${times[2]} ms (runs ${times.join(", ")} ms), page ${html.length} bytes`);
}
