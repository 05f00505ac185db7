// The workspace view of synapse-mcp, an MCP App. It talks to its host with JSON-RPC over
// postMessage (ui/initialize, tools/call, host context changes) and reads and writes the
// workspace through the server's ordinary tools (variables and state; a chat's floors:
// SnapshotList, SnapshotGet, SnapshotDiff, SnapshotUpdate, SnapshotReprocess,
// SnapshotGlobalSave; the function library: FunctionList, FunctionTest, FunctionUpsert,
// FunctionEnable, FunctionRemove, FunctionReorder, FunctionMove, FunctionImport,
// FunctionExport), so a write asks the user exactly as it does when the model calls it, and
// through its own AppWriteVar, which writes a variable as the person's (USER_ADD). A plan's
// trace is the RunPlan result the host hands over. build.rs appends the management logic it
// shares with the SillyTavern extension (integrations/sillytavern/lib/manage.js: libraryOf,
// reorderedIds, moveArguments, parseFunction, parseState, parseMessages…).
"use strict";
// When the page's milestones happened (the benchmark reads them): the script started, the host
// answered ui/initialize, the result of the tool that opened the view came, the first rows drew.
const milestones = { script: performance.timeOrigin + performance.now() };
window.__milestones = milestones;
const reached = (name) => { milestones[name] ??= performance.timeOrigin + performance.now(); };

const PROTOCOL_VERSION = "2026-01-26";
const ROW_HEIGHT = 32;
const WINDOW = 2000;

// ---- The host connection -------------------------------------------------------------------
const pending = new Map();
let nextId = 1;
let host = null;

function send(message) {
  window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
}

function request(method, params) {
  const id = nextId++;
  send({ id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

function notify(method, params) {
  send({ method, params });
}

window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  const message = event.data;
  if (!message || message.jsonrpc !== "2.0") return;
  if (message.id !== undefined && !message.method) {
    const waiting = pending.get(message.id);
    if (!waiting) return;
    pending.delete(message.id);
    if (message.error) waiting.reject(new Error(message.error.message || "the host refused"));
    else waiting.resolve(message.result);
    return;
  }
  switch (message.method) {
    case "ui/notifications/host-context-changed":
      applyContext(message.params || {});
      break;
    case "ui/notifications/tool-input":
      openedWith = (message.params && message.params.arguments) || {};
      break;
    case "ui/notifications/tool-result":
      reached("result");
      showToolResult(message.params || {});
      break;
    case "ui/resource-teardown":
      send({ id: message.id, result: {} });
      break;
    case "ping":
      send({ id: message.id, result: {} });
      break;
    default:
      if (message.id !== undefined) {
        send({ id: message.id, error: { code: -32601, message: `unknown method ${message.method}` } });
      }
  }
});

let context = {};
function applyContext(changed) {
  context = { ...context, ...changed };
  if (context.theme) document.documentElement.dataset.theme = context.theme;
  const variables = context.styles && context.styles.variables;
  if (variables) {
    for (const [name, value] of Object.entries(variables)) {
      if (value) document.documentElement.style.setProperty(name, value);
    }
  }
  const modes = context.availableDisplayModes || [];
  const button = document.getElementById("fullscreen");
  button.hidden = !modes.includes("fullscreen");
  button.textContent = context.displayMode === "fullscreen" ? "Exit full screen" : "Full screen";
}

// A tool call through the host; the result's text (a tool error becomes an exception).
// The chat snapshot tools (floors, functions) are a tool group a workspace may have off: a call
// to one then says so and offers to turn the group on, instead of "unknown tool".
const SNAPSHOT_TOOLS = /^(Snapshot|Function|Template)/;

async function callTool(name, args) {
  let result;
  try {
    result = await request("tools/call", { name, arguments: args });
  } catch (error) {
    throw groupOff(name, error.message) || error;
  }
  const text = (result.content || []).filter((block) => block.type === "text").map((block) => block.text).join("\n");
  if (result.isError) throw groupOff(name, text) || new Error(text || `${name} failed`);
  return { text, structured: result.structuredContent };
}

// The error for a snapshot tool the server does not list (the server answers "unknown tool",
// which a host passes on as an error or a failed result); `null` for any other failure.
function groupOff(name, text) {
  if (!SNAPSHOT_TOOLS.test(name) || !text.includes(`unknown tool \`${name}\``)) return null;
  const error = new Error("The chat snapshot tools are off in this workspace: turn on the snapshots group to use this tab.");
  error.groupOff = "snapshots";
  return error;
}

function status(text, kind) {
  const element = document.getElementById("status");
  element.textContent = text;
  element.className = kind || "";
  document.getElementById("turn-on").hidden = true;
}

// A failed load: its message, and for a group that is off, the button that turns it on (the
// user approves the switch, as when the model asks) and then loads again.
function failed(error, reload) {
  status(error.message, "error");
  if (!error.groupOff) return;
  const button = document.getElementById("turn-on");
  button.hidden = false;
  button.onclick = async () => {
    try {
      await callTool("ToolGroups", { action: "enable", group: error.groupOff });
      status(`The ${error.groupOff} group is on.`, "ok");
      await reload();
    } catch (switchError) {
      status(switchError.message, "error");
    }
  };
}

// ---- Tabs ------------------------------------------------------------------------------------
const tabs = ["variables", "state", "floors", "functions", "plan", "calls"];
function selectTab(name) {
  for (const tab of tabs) {
    const selected = tab === name;
    const button = document.getElementById(`tab-${tab}`);
    button.setAttribute("aria-selected", String(selected));
    button.tabIndex = selected ? 0 : -1;
    document.getElementById(`view-${tab}`).hidden = !selected;
  }
  if (name === "state") loadState();
  else if (name === "variables") variableList.render();
  else if (name === "floors") floorList.render();
  else if (name === "plan") return;
  else if (name === "calls") loadCalls();
  else if (functionList.items.length) functionList.render();
  else loadFunctions();
}
for (const [index, tab] of tabs.entries()) {
  const button = document.getElementById(`tab-${tab}`);
  button.addEventListener("click", () => selectTab(tab));
  button.addEventListener("keydown", (event) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    const next = tabs[(index + step + tabs.length) % tabs.length];
    selectTab(next);
    document.getElementById(`tab-${next}`).focus();
  });
}

// ---- A virtualised list: only the rows in sight (and a few around them) exist in the page ----
class VirtualList {
  constructor(element, body, { row, choose }) {
    Object.assign(this, { element, body, row, onChoose: choose, items: [], selected: -1 });
    element.addEventListener("scroll", () => this.render());
    element.addEventListener("keydown", (event) => {
      const moves = { ArrowDown: 1, ArrowUp: -1, PageDown: 10, PageUp: -10 };
      if (event.key === "Home" || event.key === "End") {
        event.preventDefault();
        this.choose(event.key === "Home" ? 0 : this.items.length - 1);
      } else if (moves[event.key] && this.items.length) {
        event.preventDefault();
        this.choose(Math.min(this.items.length - 1, Math.max(0, this.selected + moves[event.key])));
      }
    });
  }

  show(items) {
    this.items = items;
    this.selected = items.length ? Math.min(Math.max(this.selected, 0), items.length - 1) : -1;
    this.body.style.height = `${items.length * ROW_HEIGHT}px`;
    this.render();
  }

  render() {
    const { element } = this;
    const first = Math.max(0, Math.floor(element.scrollTop / ROW_HEIGHT) - 5);
    const last = Math.min(this.items.length, Math.ceil((element.scrollTop + element.clientHeight) / ROW_HEIGHT) + 5);
    const rows = [];
    for (let index = first; index < last; index++) {
      const row = document.createElement("div");
      row.className = "row";
      row.id = `${element.id}-${index}`;
      row.setAttribute("role", "option");
      row.setAttribute("aria-selected", String(index === this.selected));
      row.style.top = `${index * ROW_HEIGHT}px`;
      row.append(...this.row(this.items[index]));
      row.addEventListener("click", () => this.choose(index));
      rows.push(row);
    }
    this.body.replaceChildren(...rows);
    if (this.selected >= 0) element.setAttribute("aria-activedescendant", `${element.id}-${this.selected}`);
  }

  choose(index) {
    if (index < 0 || index >= this.items.length) return;
    this.selected = index;
    const top = index * ROW_HEIGHT;
    const { element } = this;
    if (top < element.scrollTop) element.scrollTop = top;
    else if (top + ROW_HEIGHT > element.scrollTop + element.clientHeight) element.scrollTop = top + ROW_HEIGHT - element.clientHeight;
    this.render();
    // What choosing does (reading the variable, say): awaited by a caller that reports after it.
    return this.onChoose(this.items[index], index);
  }
}

function span(className, text) {
  const element = document.createElement("span");
  element.className = className;
  element.textContent = text;
  return element;
}

// ---- Variables: a filtered list and a value read in windows ---------------------------------
const variableList = new VirtualList(document.getElementById("list"), document.getElementById("list-body"), {
  row: (variable) => [span("name", variable.name), span("badge", variable.type)],
  choose: (variable) => showVariable(variable, 0),
});

// The filters set in the page, as ListVars takes them (empty when none is set).
function currentFilter() {
  const filter = {};
  for (const field of ["search", "type", "tag"]) {
    const value = document.getElementById(field).value.trim();
    if (value) filter[field] = value;
  }
  return filter;
}

async function loadVariables() {
  const filter = currentFilter();
  const unfiltered = !Object.keys(filter).length;
  try {
    // `_outputLimit: 0`: the whole list, not the part that fits the model's output limit.
    // `cached: true`: the cached tool results too, which the model sees only counted.
    const args = unfiltered ? { cached: true, _outputLimit: 0 } : { filter, cached: true, _outputLimit: 0 };
    const { structured } = await callTool("ListVars", args);
    listedByView = true;
    showVariables(structured, unfiltered);
    status("");
  } catch (error) {
    status(error.message, "error");
  }
}

// Draws a ListVars result; `unfiltered` when it lists every variable (the tag menu follows it).
function showVariables(structured, unfiltered) {
  const variables = (structured && structured.variables) || [];
  if (unfiltered) fillTags(variables);
  document.getElementById("count").textContent = `${variables.length} of capacity ${structured ? structured.capacity : "?"}`;
  variableList.show(variables);
  if (variables.length) reached("rows");
}

// The arguments of the tool call that opened the view (`ui/notifications/tool-input`), and
// whether the view's own ListVars call has answered (after that, it is the fresher list).
let openedWith = {};
let listedByView = false;

function fillTags(all) {
  const select = document.getElementById("tag");
  const current = select.value;
  const tags = [...new Set(all.flatMap((variable) => variable.tags || []))].sort();
  select.replaceChildren(new Option("Any tag", ""), ...tags.map((tag) => new Option(tag, tag)));
  select.value = tags.includes(current) ? current : "";
}

async function showVariable(variable, start) {
  const detail = document.getElementById("detail");
  const reference = `$VAR_REF{{${variable.name}}}`;
  let text;
  try {
    ({ text } = await callTool("ReadVar", { name: variable.name, start, length: WINDOW }));
  } catch (error) {
    status(error.message, "error");
    return;
  }
  const newline = text.indexOf("\n");
  const header = newline < 0 ? text : text.slice(0, newline);
  const value = newline < 0 ? "" : text.slice(newline + 1);
  const heading = document.createElement("h2");
  heading.textContent = variable.name;
  const facts = document.createElement("dl");
  const fact = (label, content) => {
    if (content === undefined || content === "") return;
    const term = document.createElement("dt");
    term.textContent = label;
    const description = document.createElement("dd");
    description.textContent = content;
    facts.append(term, description);
  };
  fact("Type", variable.type);
  fact("Length", `${variable.length} characters`);
  fact("Description", variable.desc);
  fact("Tags", (variable.tags || []).join(", "));
  fact("Updated", variable.updated);
  const actions = document.createElement("div");
  actions.className = "actions";
  const copy = document.createElement("button");
  copy.textContent = "Copy $VAR_REF";
  copy.title = reference;
  copy.addEventListener("click", () => copyText(reference));
  actions.append(copy);
  if (start > 0) actions.append(windowButton("Previous window", () => showVariable(variable, Math.max(0, start - WINDOW))));
  if (start + WINDOW < variable.length) actions.append(windowButton("Next window", () => showVariable(variable, start + WINDOW)));
  const window_ = document.createElement("p");
  window_.className = "hint";
  window_.textContent = header.replace(/^\[|\]$/g, "");
  const pre = document.createElement("pre");
  pre.textContent = value;
  detail.replaceChildren(heading, facts, actions, window_, pre);
  // A variable chosen while the new-variable form is open shows in its place (the form keeps
  // what was typed in it).
  showNewVariable(false);
}

function windowButton(label, action) {
  const button = document.createElement("button");
  button.textContent = label;
  button.addEventListener("click", action);
  return button;
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // Sandboxed frames often lack the clipboard permission: copy through a selected field.
    const field = document.createElement("textarea");
    field.value = text;
    document.body.append(field);
    field.select();
    document.execCommand("copy");
    field.remove();
  }
  status(`Copied ${text}`, "ok");
}

let searchTimer;
document.getElementById("search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(loadVariables, 200);
});
document.getElementById("type").addEventListener("change", loadVariables);
document.getElementById("tag").addEventListener("change", loadVariables);

// ---- A new variable, written as the person's: AppWriteVar types it USER_ADD (a tool only the
// view calls; the model never sees it) -------------------------------------------------------
const newVariable = document.getElementById("new-variable");
function showNewVariable(open) {
  newVariable.hidden = !open;
  document.getElementById("detail").hidden = open;
  if (open) document.getElementById("new-name").focus();
}
document.getElementById("add-variable").addEventListener("click", () => showNewVariable(true));
document.getElementById("cancel-variable").addEventListener("click", () => showNewVariable(false));
// A click, not a form's submit: a sandboxed view may not be allowed to submit forms.
document.getElementById("save-variable").addEventListener("click", async () => {
  // The name goes as typed: the server says what is wrong with it, and the form keeps it.
  const name = document.getElementById("new-name").value;
  const value = document.getElementById("new-value").value;
  const tags = document.getElementById("new-tags").value.split(",").map((tag) => tag.trim()).filter(Boolean);
  let written;
  try {
    ({ structured: written } = await callTool("AppWriteVar", tags.length ? { name, value, tags } : { name, value }));
  } catch (error) {
    status(error.message, "error");
    return;
  }
  for (const field of ["new-name", "new-value", "new-tags"]) document.getElementById(field).value = "";
  showNewVariable(false);
  await loadVariables();
  const index = variableList.items.findIndex((variable) => variable.name === written.name);
  // The status says it is written once the view shows it.
  if (index >= 0) await variableList.choose(index);
  else await openVariable(written.name);
  const evicted = written.evicted && written.evicted.length ? `; the full workspace evicted ${written.evicted.join(", ")}` : "";
  status(`${written.created ? "Wrote" : "Replaced"} ${written.name} (USER_ADD, ${written.length} characters)${evicted}`, "ok");
});

// ---- State: the document as a tree; a value is edited through WriteState ---------------------
const tree = document.getElementById("tree");
const collapsed = new Set();

async function loadState() {
  try {
    const { text } = await callTool("ReadState", { length: 100000000 });
    const document_ = JSON.parse(text.slice(text.indexOf("\n") + 1));
    renderTree(document_);
    status("");
  } catch (error) {
    status(error.message, "error");
  }
}

function renderTree(root) {
  const top = document.createElement("ul");
  top.setAttribute("role", "group");
  if (root && typeof root === "object" && Object.keys(root).length) {
    for (const [key, value] of Object.entries(root)) top.append(treeItem(key, value, [key]));
  } else {
    const empty = document.createElement("li");
    empty.className = "hint";
    empty.textContent = "The state document is empty; WriteState or a plan's _outputPath fills it.";
    top.append(empty);
  }
  tree.replaceChildren(top);
  const first = tree.querySelector(".node");
  if (first) first.tabIndex = 0;
}

function treeItem(key, value, path) {
  const item = document.createElement("li");
  item.setAttribute("role", "treeitem");
  const node = document.createElement("span");
  node.className = "node";
  node.tabIndex = -1;
  node.dataset.path = path.join(".");
  const toggle = document.createElement("span");
  toggle.className = "toggle";
  const label = document.createElement("span");
  label.className = "key";
  label.textContent = `${key}:`;
  node.append(toggle, label);
  item.append(node);
  const branch = value !== null && typeof value === "object";
  if (branch) {
    const open = !collapsed.has(node.dataset.path);
    item.setAttribute("aria-expanded", String(open));
    toggle.textContent = open ? "▾" : "▸";
    const summary = document.createElement("span");
    summary.className = "hint";
    summary.textContent = Array.isArray(value) ? `[${value.length}]` : `{${Object.keys(value).length}}`;
    node.append(summary);
    const children = document.createElement("ul");
    children.setAttribute("role", "group");
    children.hidden = !open;
    for (const [childKey, child] of Object.entries(value)) children.append(treeItem(childKey, child, [...path, childKey]));
    item.append(children);
    const flip = () => {
      const now = children.hidden;
      children.hidden = !now;
      item.setAttribute("aria-expanded", String(now));
      toggle.textContent = now ? "▾" : "▸";
      if (now) collapsed.delete(node.dataset.path);
      else collapsed.add(node.dataset.path);
    };
    toggle.addEventListener("click", flip);
    node.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); flip(); }
    });
  } else {
    const shown = document.createElement("span");
    shown.className = `value ${typeof value}`;
    shown.textContent = JSON.stringify(value);
    node.append(shown);
    const edit = () => editValue(node, shown, value);
    node.addEventListener("dblclick", edit);
    node.addEventListener("keydown", (event) => {
      if (event.key === "Enter") { event.preventDefault(); edit(); }
    });
  }
  return item;
}

function editValue(node, shown, value) {
  if (node.querySelector("input")) return;
  const field = document.createElement("input");
  field.value = JSON.stringify(value);
  field.setAttribute("aria-label", `New JSON value for ${node.dataset.path}`);
  shown.replaceWith(field);
  field.focus();
  field.select();
  field.addEventListener("keydown", async (event) => {
    event.stopPropagation();
    if (event.key === "Escape") { field.replaceWith(shown); node.focus(); return; }
    if (event.key !== "Enter") return;
    let parsed;
    try {
      parsed = JSON.parse(field.value);
    } catch {
      parsed = field.value; // Not JSON: written as a string.
    }
    status(`Writing ${node.dataset.path}…`);
    try {
      await callTool("WriteState", { path: node.dataset.path, value: parsed });
      await loadState();
      status(`Wrote ${node.dataset.path}`, "ok");
      const again = tree.querySelector(`.node[data-path="${CSS.escape(node.dataset.path)}"]`);
      if (again) again.focus();
    } catch (error) {
      status(error.message, "error");
      field.replaceWith(shown);
    }
  });
}

// Arrow keys move between the tree's visible nodes.
tree.addEventListener("keydown", (event) => {
  const step = { ArrowDown: 1, ArrowUp: -1 }[event.key];
  if (!step || event.target.tagName === "INPUT") return;
  const nodes = [...tree.querySelectorAll(".node")].filter((node) => node.offsetParent !== null);
  const index = nodes.indexOf(document.activeElement);
  const next = nodes[Math.min(nodes.length - 1, Math.max(0, index + step))];
  if (next) { event.preventDefault(); tree.querySelectorAll(".node").forEach((node) => { node.tabIndex = -1; }); next.tabIndex = 0; next.focus(); }
});
document.getElementById("reload-state").addEventListener("click", loadState);

// ---- Floors: a chat's snapshots by message, and what each message changed --------------------
const floorList = new VirtualList(document.getElementById("floors"), document.getElementById("floors-body"), {
  row: (floor) => [
    span("badge", `#${floor.messageIndex ?? "–"}${floor.swipeId ? ` swipe ${floor.swipeId}` : ""}`),
    span("summary", floor.summary || "no change"),
  ],
  choose: (floor, index) => showFloor(floor, index),
});

// The page of floors on show: SnapshotList's `previous` and `next` (the arguments of the pages
// around it) and how many floors come before it.
let floorPage = {};

// A page of the chat's floors: the newest by default, the page starting at the message to jump
// to, or the page `around` names (`previous`/`next` of the one on show).
async function loadFloors(around) {
  const chatFile = document.getElementById("chat").value.trim();
  if (!chatFile) return;
  const jump = around ? "" : document.getElementById("jump").value;
  const args = { chatFile, ...(around || {}), _outputLimit: 0 };
  if (jump !== "") args.fromIndex = Number(jump);
  try {
    const { structured } = await callTool("SnapshotList", args);
    showFloors(chatFile, structured, jump);
  } catch (error) {
    failed(error, () => loadFloors(around));
  }
}

// Draws a page of SnapshotList's result, and opens the floor of message `jump` when one is given.
function showFloors(chatFile, structured, jump) {
  const floors = (structured && structured.floors) || [];
  floorPage = { chatFile, previous: structured && structured.previous, next: structured && structured.next, earlier: structured ? structured.earlier : 0 };
  document.getElementById("earlier-floors").disabled = !floorPage.previous;
  document.getElementById("later-floors").disabled = !floorPage.next;
  const total = structured ? structured.total : floors.length;
  const shown = new Set(floors.map((floor) => floor.messageIndex)).size;
  document.getElementById("floor-count").textContent = shown === total ? `${total} floors` : `floors ${floorPage.earlier + 1}–${floorPage.earlier + shown} of ${total}`;
  floorList.selected = -1;
  floorList.element.scrollTop = 0;
  floorList.show(floors);
  status("");
  if (jump !== "") {
    const index = floors.findIndex((floor) => floor.messageIndex === Number(jump));
    if (index < 0) status(`No floor for message ${jump}`, "error");
    else floorList.choose(index);
  }
}

// The floor before `floor` (another message's): on this page, or the last of the page before.
async function floorBefore(floor, index) {
  const onPage = floorList.items.slice(0, index).reverse().find((other) => other.messageIndex !== floor.messageIndex);
  if (onPage || !floorPage.previous) return onPage;
  const { structured } = await callTool("SnapshotList", { chatFile: floorPage.chatFile, ...floorPage.previous, _outputLimit: 0 });
  return ((structured && structured.floors) || []).reverse().find((other) => other.messageIndex !== floor.messageIndex);
}

// The diff a message made: from the floor before it (or the start) to this one.
async function showFloor(floor, index) {
  const detail = document.getElementById("floor");
  const heading = document.createElement("h2");
  heading.textContent = `Message ${floor.messageIndex ?? "–"}${floor.swipeId ? `, swipe ${floor.swipeId}` : ""}`;
  const facts = document.createElement("dl");
  for (const [label, content] of [
    ["Snapshot", floor.snapshotId],
    ["Created", floor.createdAt],
    ["Stored", floor.storedBytes === undefined ? undefined : `${floor.storedBytes} bytes`],
    ["Summary", floor.summary],
  ]) {
    if (content === undefined) continue;
    const term = document.createElement("dt");
    term.textContent = label;
    const description = document.createElement("dd");
    description.textContent = content;
    facts.append(term, description);
  }
  const patch = document.createElement("ul");
  patch.className = "patch";
  patch.setAttribute("aria-label", "What this message changed");
  let previous;
  try {
    previous = await floorBefore(floor, index);
  } catch (error) {
    status(error.message, "error");
  }
  if (previous) {
    try {
      const { structured } = await callTool("SnapshotDiff", { from: previous.snapshotId, to: floor.snapshotId });
      for (const operation of (structured && structured.patch) || []) {
        const item = document.createElement("li");
        item.append(span(`op ${operation.op}`, operation.op), document.createTextNode(operation.path));
        if ("value" in operation) item.append(document.createTextNode(` = ${JSON.stringify(operation.value)}`));
        patch.append(item);
      }
      if (!patch.children.length) patch.append(span("hint", "No change against the floor before."));
    } catch (error) {
      status(error.message, "error");
    }
  } else {
    patch.append(span("hint", "The first floor: nothing before it to compare with."));
  }
  // Saving the floor as a global snapshot: a state to start other chats from (asks nothing:
  // a new label only adds).
  const label = document.createElement("input");
  label.id = "global-label";
  label.placeholder = "Label";
  label.setAttribute("aria-label", "Label of the global snapshot");
  const save = document.createElement("button");
  save.id = "save-global";
  save.textContent = "Save as global snapshot";
  save.addEventListener("click", async () => {
    if (!label.value.trim()) return status("Give the global snapshot a label", "error");
    try {
      await callTool("SnapshotGlobalSave", { label: label.value.trim(), from: floor.snapshotId });
      status(`Saved as the global snapshot ${label.value.trim()}`);
    } catch (error) {
      status(error.message, "error");
    }
  });
  const actions = document.createElement("div");
  actions.className = "actions";
  actions.append(label, save);
  detail.replaceChildren(heading, facts, patch, actions, floorState(floor), reprocessing(floor));
}

// An element with attributes and children (the floor's editing controls).
function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "text") node.textContent = value;
    else if (key === "onclick") node.addEventListener("click", value);
    else if (value !== false) node.setAttribute(key, value === true ? "" : String(value));
  }
  node.append(...children);
  return node;
}

// A floor's state: read (SnapshotGet), edited and saved in place, exported into the text box
// below it and imported from there (SnapshotUpdate, MVU's metadata stripped when ticked). The
// floors after it stay as they were until the chat is reprocessed.
function floorState(floor) {
  const state = element("textarea", { id: "floor-state", rows: 8, spellcheck: "false", "aria-label": "The floor's state (JSON)" });
  const exchange = element("textarea", { id: "floor-io", rows: 4, spellcheck: "false", "aria-label": "A state exported, or to import (JSON)", placeholder: "Export writes the state here; paste a state (MVU's too) to import it" });
  const strip = element("input", { type: "checkbox", id: "mvu-strip", checked: true });
  const read = async () => {
    const { structured } = await callTool("SnapshotGet", { id: floor.snapshotId, _outputLimit: 0 });
    state.value = JSON.stringify(structured.snapshot, null, 2);
  };
  const update = async (text, mvuStrip, done) => {
    try {
      await callTool("SnapshotUpdate", { id: floor.snapshotId, snapshot: parseState(text), mvuStrip });
      await read();
      status(done);
    } catch (error) {
      status(error.message, "error");
    }
  };
  const exportState = async () => {
    try {
      const { structured } = await callTool("SnapshotGet", { id: floor.snapshotId, mvuStrip: strip.checked, _outputLimit: 0 });
      exchange.value = JSON.stringify(structured.snapshot, null, 2);
      await copyText(exchange.value);
      status("Exported into the box below (and copied)");
    } catch (error) {
      status(error.message, "error");
    }
  };
  read().catch((error) => status(error.message, "error"));
  return element("div", { class: "tester" },
    element("label", {}, "State", state),
    element("div", { class: "actions" },
      element("button", { id: "save-floor", onclick: () => update(state.value, false, "Saved the edit; later floors are as they were until reprocessed") }, "Save the edit"),
      element("button", { id: "export-floor", onclick: exportState }, "Export"),
      element("button", { id: "import-floor", onclick: () => update(exchange.value, strip.checked, "Imported into the floor") }, "Import"),
      element("label", { class: "inline" }, strip, " strip MVU metadata")),
    exchange);
}

// Reprocessing the chat from this floor's message on (SnapshotReprocess, which asks the user
// first): the view does not hold the chat, so its messages are pasted, as a JSON array or the
// chat file itself.
function reprocessing(floor) {
  const from = floor.messageIndex ?? 0;
  const messages = element("textarea", { id: "reprocess-messages", rows: 4, spellcheck: "false", "aria-label": "The chat's messages (JSON, or the .jsonl chat file)", placeholder: "The chat as it is now: a JSON array of messages, or the SillyTavern chat file (.jsonl)" });
  const character = element("input", { id: "reprocess-character", placeholder: "Character (its template and functions)", "aria-label": "Character id for reprocessing", value: characterField() });
  const run = async () => {
    try {
      const args = { chatFile: floorPage.chatFile, fromIndex: from, messages: parseMessages(messages.value), _outputLimit: 0 };
      Object.assign(args, scopeArguments("character", character.value.trim()));
      const { structured } = await callTool("SnapshotReprocess", args);
      await loadFloors();
      status(`Reprocessed from message ${from}: ${(structured.bindings || []).length} floors made, ${structured.deleted} replaced`);
    } catch (error) {
      status(error.message, "error");
    }
  };
  return element("details", { id: "reprocess-floor", class: "tester" },
    element("summary", { text: `Reprocess from message ${from}` }),
    messages, character,
    element("div", { class: "actions" }, element("button", { id: "reprocess", onclick: run }, `Reprocess from message ${from}`)));
}

// Not a form: hosts sandbox the view without `allow-forms`, where a form never submits.
document.getElementById("show-floors").addEventListener("click", () => loadFloors());
document.getElementById("earlier-floors").addEventListener("click", () => loadFloors(floorPage.previous));
document.getElementById("later-floors").addEventListener("click", () => loadFloors(floorPage.next));
for (const field of ["chat", "jump"]) {
  document.getElementById(field).addEventListener("keydown", (event) => {
    if (event.key === "Enter") loadFloors();
  });
}

// ---- Functions: the library, and a live tester of a function's pattern -----------------------
const functionList = new VirtualList(document.getElementById("functions"), document.getElementById("functions-body"), {
  row: (fn) => [span("name", fn.name), span(fn.enabled ? "badge" : "badge off", fn.local ? `${fn.type}, local` : fn.type)],
  choose: (fn) => chooseFunction(fn),
});
let chosenFunction = null;
// The last FunctionList answer, for a library's running order and its own functions.
let listedFunctions = { global: [], local: [] };
// The library the "every field" editor saves into: the chosen function's, or for a new one
// the one chosen under "Import and export".
let editedScope = "global";

const characterField = () => document.getElementById("character").value.trim();
const scopeOf = (fn) => (fn.local ? "character" : "global");
const FUNCTION_BUTTONS = ["save-function", "toggle-function", "delete-function", "function-earlier", "function-later", "move-function"];

// The character's functions first, then the global library, each in running order.
async function loadFunctions(keep) {
  const characterId = characterField();
  try {
    const { structured } = await callTool("FunctionList", { ...scopeArguments("character", characterId), _outputLimit: 0 });
    listedFunctions = structured || { global: [], local: [] };
    const local = libraryOf(listedFunctions, "character").map((fn) => ({ ...fn, local: true }));
    const functions = [...local, ...libraryOf(listedFunctions, "global")];
    document.getElementById("function-count").textContent = `${functions.length} functions`;
    functionList.show(functions);
    const kept = keep ? functions.findIndex((fn) => fn.id === keep) : -1;
    if (kept >= 0) functionList.choose(kept);
    status("");
    testReply();
  } catch (error) {
    failed(error, loadFunctions);
  }
}

function chooseFunction(fn) {
  chosenFunction = fn;
  const own = !fn.builtin;
  document.getElementById("save-function").disabled = fn.type !== "active" || !own;
  document.getElementById("toggle-function").disabled = false;
  document.getElementById("toggle-function").textContent = fn.enabled ? "Turn off" : "Turn on";
  document.getElementById("delete-function").disabled = !own;
  const library = libraryOf(listedFunctions, scopeOf(fn));
  document.getElementById("function-earlier").disabled = !reorderedIds(library, fn.id, -1);
  document.getElementById("function-later").disabled = !reorderedIds(library, fn.id, 1);
  const move = document.getElementById("move-function");
  move.disabled = !own;
  move.textContent = fn.local ? "To the global library" : "To the character";
  document.getElementById("function-name").textContent = fn.name;
  document.getElementById("function-description").textContent = fn.description || (fn.signature ?? "");
  const pattern = document.getElementById("pattern");
  pattern.value = fn.pattern || "";
  pattern.disabled = fn.type !== "active" || !own;
  pattern.title = fn.builtin ? "A built-in runs natively; its pattern is for export" : "";
  if (fn.example && !document.getElementById("reply").dataset.edited) document.getElementById("reply").value = fn.example;
  editFields(editableFunction(fn), scopeOf(fn));
  testReply();
}

// Fills the "every field" editor with a function to change (or a new one) and its library.
function editFields(fn, scope) {
  editedScope = scope;
  document.getElementById("function-json").value = JSON.stringify(fn, null, 2);
  document.getElementById("function-json-scope").textContent = scope === "character" ? `saved into ${characterField() || "the character"}'s library` : "saved into the global library";
}

// A dry run of the library over the reply, with the edited pattern in place of the chosen
// function's own; nothing is stored.
let testTimer;
let testRun = 0;
// Whether the status line holds the tester's own error, which only the tester clears (it
// leaves alone what a save or a move said).
let testFailed = false;
function testSays(text) {
  if (text) status(text, "error");
  else if (testFailed) status("");
  testFailed = Boolean(text);
}
function testReply() {
  clearTimeout(testTimer);
  testTimer = setTimeout(async () => {
    const run = ++testRun;
    const args = { text: document.getElementById("reply").value, _outputLimit: 0 };
    Object.assign(args, scopeArguments("character", characterField()));
    try {
      args.snapshot = JSON.parse(document.getElementById("start-state").value || "{}");
    } catch {
      testSays("The start state is not JSON");
      return;
    }
    const pattern = document.getElementById("pattern");
    if (chosenFunction && !pattern.disabled) args.function = { ...editableFunction(chosenFunction), pattern: pattern.value };
    try {
      const { structured } = await callTool("FunctionTest", args);
      if (run !== testRun) return;
      showTested(structured || { steps: [], errors: [], snapshot: {} });
      testSays("");
    } catch (error) {
      if (run === testRun) testSays(error.message);
    }
  }, 250);
}

function showTested(tested) {
  const steps = document.getElementById("steps");
  const items = tested.steps.map((step) => {
    const item = document.createElement("li");
    item.append(span("op replace", step.function));
    const where = step.position === undefined ? step.kind : `at ${step.position}`;
    item.append(document.createTextNode(`${where}${step.arguments ? ` (${step.arguments.map((argument) => JSON.stringify(argument)).join(", ")})` : ""}`));
    // A step names its failures by their index in `tested.errors`, which holds each text once.
    for (const index of step.errors) item.append(document.createElement("br"), span("step-error", tested.errors[index]?.message ?? ""));
    return item;
  });
  const shown = new Set(tested.steps.flatMap((step) => step.errors));
  for (const error of tested.errors.filter((_, index) => !shown.has(index))) {
    const item = document.createElement("li");
    item.append(span("step-error", `${error.function}: ${error.message}${error.suggestion ? ` (did you mean ${error.suggestion}?)` : ""}`));
    items.push(item);
  }
  if (!items.length) items.push(span("hint", "No call found in the reply."));
  steps.replaceChildren(...items);
  document.getElementById("tested-state").textContent = JSON.stringify(tested.snapshot, null, 2);
}

// Writes go through the tools a model calls, with the same approvals (a changed pattern and a
// deletion ask the user first). `keep` names a function to choose again once the list is back.
async function changeFunction(tool, args, done, { scope = chosenFunction && scopeOf(chosenFunction), keep } = {}) {
  try {
    await callTool(tool, { ...args, ...scopeArguments(scope, characterField()) });
    chosenFunction = null;
    for (const id of FUNCTION_BUTTONS) document.getElementById(id).disabled = true;
    await loadFunctions(keep);
    status(done);
  } catch (error) {
    status(error.message, "error");
  }
}
document.getElementById("save-function").addEventListener("click", () => {
  const stored = editableFunction(chosenFunction);
  changeFunction("FunctionUpsert", { function: { ...stored, pattern: document.getElementById("pattern").value } }, `Saved ${stored.name}`);
});
document.getElementById("toggle-function").addEventListener("click", () => {
  const enabled = !chosenFunction.enabled;
  changeFunction("FunctionEnable", { ids: [chosenFunction.id], enabled }, `${chosenFunction.name} ${enabled ? "on" : "off"}`);
});
document.getElementById("delete-function").addEventListener("click", () => {
  changeFunction("FunctionRemove", { id: chosenFunction.id }, `Deleted ${chosenFunction.name}`);
});
for (const [id, step] of [["function-earlier", -1], ["function-later", 1]]) {
  document.getElementById(id).addEventListener("click", () => {
    const ids = reorderedIds(libraryOf(listedFunctions, scopeOf(chosenFunction)), chosenFunction.id, step);
    if (ids) changeFunction("FunctionReorder", { ids }, `${chosenFunction.name} runs ${step < 0 ? "earlier" : "later"}`, { keep: chosenFunction.id });
  });
}
document.getElementById("move-function").addEventListener("click", () => {
  const characterId = characterField();
  if (!characterId) return status("Type the character's id first: its library is where the function goes or comes from", "error");
  const fn = chosenFunction;
  const to = fn.local ? "the global library" : `${characterId}'s library`;
  changeFunction("FunctionMove", moveArguments(fn, scopeOf(fn), characterId), `Moved ${fn.name} to ${to}`, { scope: "global", keep: fn.id });
});

// Every field of a function, as JSON: a new one, or the chosen one changed beyond its pattern.
document.getElementById("new-function").addEventListener("click", () => {
  editFields(newFunction(), document.getElementById("library-scope").value);
  document.getElementById("function-fields").open = true;
});
document.getElementById("save-function-json").addEventListener("click", () => {
  let fn;
  try {
    fn = parseFunction(document.getElementById("function-json").value);
  } catch (error) {
    return status(error.message, "error");
  }
  if (editedScope === "character" && !characterField()) return status("Type the character's id first: the function goes into its library", "error");
  changeFunction("FunctionUpsert", { function: fn }, `Saved ${fn.name}`, { scope: editedScope });
});

// A library to and from the export format, through a text box: a sandboxed view may neither
// download nor open files.
document.getElementById("export-functions").addEventListener("click", async () => {
  const scope = document.getElementById("library-scope").value;
  const characterId = characterField();
  if (scope === "character" && !characterId) return status("Type the character's id first", "error");
  const ids = ownIds(libraryOf(listedFunctions, scope));
  if (!ids.length) return status("This library has no functions of your own to export", "error");
  try {
    const { structured } = await callTool("FunctionExport", { ids, ...scopeArguments(scope, characterId), _outputLimit: 0 });
    document.getElementById("functions-io").value = JSON.stringify(structured, null, 2);
    status(`Exported ${ids.length} functions`);
  } catch (error) {
    status(error.message, "error");
  }
});
document.getElementById("import-functions").addEventListener("click", () => {
  const scope = document.getElementById("library-scope").value;
  if (scope === "character" && !characterField()) return status("Type the character's id first", "error");
  let data;
  try {
    data = parseExport(document.getElementById("functions-io").value);
  } catch (error) {
    return status(error.message, "error");
  }
  changeFunction("FunctionImport", { data }, `Imported ${data.functions.length} functions, switched off until you turn them on`, { scope });
});

document.getElementById("show-functions").addEventListener("click", () => loadFunctions());
document.getElementById("character").addEventListener("keydown", (event) => {
  if (event.key === "Enter") loadFunctions();
});
for (const field of ["pattern", "reply", "start-state"]) {
  document.getElementById(field).addEventListener("input", (event) => {
    if (field === "reply") event.target.dataset.edited = "yes";
    testReply();
  });
}

// ---- A plan's trace: the RunPlan result that opened the view ---------------------------------
function showPlan(plan) {
  const steps = plan.steps || [];
  const end = Math.max(1, ...steps.map((step) => step.finishedMicros || step.startedMicros || 0));
  const counts = {};
  for (const step of steps) counts[step.status] = (counts[step.status] || 0) + 1;
  document.getElementById("plan-summary").textContent =
    `${plan.ok ? "Succeeded" : "Did not succeed"}: ${steps.length} steps (${Object.entries(counts).map(([status, count]) => `${count} ${status}`).join(", ")}) ` +
    `in ${(end / 1000).toFixed(1)} ms; order ${plan.order.map((wave) => wave.join(" ∥ ")).join(" → ")}`;
  document.getElementById("plan-steps").replaceChildren(...steps.map((step) => {
    const item = document.createElement("li");
    const label = document.createElement("span");
    label.append(span("name", step.id), document.createTextNode(" "), span(`badge`, `${step.tool} · ${step.status}`));
    const track = document.createElement("div");
    track.className = "bar-track";
    const bar = document.createElement("div");
    bar.className = `bar ${step.status}`;
    const start = step.startedMicros || 0;
    const finish = step.finishedMicros || start;
    bar.style.left = `${(start / end) * 100}%`;
    bar.style.width = `${((finish - start) / end) * 100}%`;
    bar.title = `${(start / 1000).toFixed(2)}–${(finish / 1000).toFixed(2)} ms`;
    track.append(bar);
    item.append(label, track);
    const notes = [];
    if (step.message) notes.push(step.message);
    if (step.written && step.written.length) notes.push(`wrote ${step.written.join(", ")}`);
    if (notes.length || step.resultVariable) {
      const note = span(`note ${step.status}`, notes.join("; "));
      if (step.resultVariable) {
        const link = document.createElement("button");
        link.className = "link";
        link.textContent = step.resultVariable;
        link.title = "Read the step's result";
        link.addEventListener("click", () => openVariable(step.resultVariable));
        note.append(document.createTextNode(notes.length ? "; result in " : "result in "), link);
      }
      item.append(document.createElement("span"), note);
    }
    return item;
  }));
  document.getElementById("plan-changes").replaceChildren(...(plan.stateDiff || []).map((change) => {
    const item = document.createElement("li");
    const op = change.before === undefined ? "add" : change.after === undefined ? "remove" : "replace";
    item.append(span(`op ${op}`, op), document.createTextNode(`state.${change.path}`));
    if (change.after !== undefined) item.append(document.createTextNode(` = ${JSON.stringify(change.after)}`));
    return item;
  }));
}

// ---- Calls: the tool-chain log (log://calls), newest first -----------------------------------
async function loadCalls() {
  try {
    const read = await request("resources/read", { uri: "log://calls" });
    showCalls(JSON.parse(read.contents[0].text).calls);
    status("");
  } catch (error) {
    status(error.message, "error");
  }
}
document.getElementById("reload-calls").addEventListener("click", loadCalls);

// Each call: its tool and time, its arguments and result as the log cut them, and a link to
// the variable that holds the whole result.
function showCalls(calls) {
  document.getElementById("call-count").textContent =
    `${calls.length} latest calls whose results are cached, newest first`;
  document.getElementById("calls").replaceChildren(...calls.map((call) => {
    const item = document.createElement("li");
    const link = document.createElement("button");
    link.className = "link";
    link.textContent = call.resultVariable;
    link.title = "Read the whole result";
    link.addEventListener("click", () => openVariable(call.resultVariable));
    const label = span("name", call.tool);
    const when = span("hint", `${call.at} · `);
    when.append(link);
    item.append(label, when, span("arguments", call.arguments), span("result", call.result));
    return item;
  }));
  if (calls.length) reached("calls");
}

// Shows one variable on the variables tab, whatever the filters hid.
async function openVariable(name) {
  document.getElementById("search").value = name;
  document.getElementById("type").value = "";
  document.getElementById("tag").value = "";
  selectTab("variables");
  await loadVariables();
  const index = variableList.items.findIndex((variable) => variable.name === name);
  if (index >= 0) await variableList.choose(index);
}

// ---- What the host shows us ------------------------------------------------------------------
// The result of the tool that opened the view picks the tab: ReadState opens the state.
function showToolResult(result) {
  const text = (result.content || []).map((block) => block.text || "").join("\n");
  const structured = result.structuredContent;
  // Opened by ListVars: its result is the list, drawn at once (the view's own ListVars call,
  // made at start, completes a list the output limit cut and follows later changes).
  const listsEverything = !openedWith.filter && !Object.keys(currentFilter()).length && !listedByView;
  if (structured && Array.isArray(structured.variables) && typeof structured.capacity === "number" && listsEverything) {
    showVariables(structured, true);
  }
  if (!structured && /^\[state/.test(text)) selectTab("state");
  if (structured && Array.isArray(structured.global)) selectTab("functions");
  if (structured && Array.isArray(structured.order) && typeof structured.ok === "boolean") {
    showPlan(structured);
    selectTab("plan");
  }
  // Opened by SnapshotList: its result is the page, drawn as it came; a page the output limit
  // cut is asked for again, whole, with the same paging arguments.
  if (structured && Array.isArray(structured.floors) && structured.chatFile) {
    document.getElementById("chat").value = structured.chatFile;
    selectTab("floors");
    if (structured._truncated) {
      const { chatFile, _outputLimit, ...paging } = openedWith;
      loadFloors(paging);
    } else {
      showFloors(structured.chatFile, structured, "");
    }
  }
}

document.getElementById("fullscreen").addEventListener("click", async () => {
  const mode = context.displayMode === "fullscreen" ? "inline" : "fullscreen";
  try {
    const granted = await request("ui/request-display-mode", { mode });
    applyContext({ displayMode: granted.mode || mode });
  } catch (error) {
    status(error.message, "error");
  }
});

new ResizeObserver(() => {
  notify("ui/notifications/size-changed", {
    width: document.documentElement.scrollWidth,
    height: document.documentElement.scrollHeight,
  });
}).observe(document.documentElement);

async function start() {
  if (window.parent === window) {
    status("Open this page in an MCP host that renders apps.", "error");
    return;
  }
  try {
    host = await request("ui/initialize", {
      protocolVersion: PROTOCOL_VERSION,
      appInfo: { name: "synapse-workspace", version: "1" },
      appCapabilities: { availableDisplayModes: ["inline", "fullscreen"] },
    });
    reached("initialized");
    applyContext(host.hostContext || {});
    notify("ui/notifications/initialized", {});
  } catch (error) {
    status(`The host did not initialize the view: ${error.message}`, "error");
    return;
  }
  await loadVariables();
  window.__workspaceReady = true;
}
start();
