// The synapse-mcp extension for SillyTavern (1.12.6 and later): on a finished AI reply, a swipe,
// an edit, a deletion, a chat change and a chat's first load it sends the chat's new messages to
// a synapse-mcp server's `SnapshotProcess`, binds each processed swipe to its snapshot id in
// `extra.synapse_snapshot`, and makes the newest state the chat variable and macro
// `{{vs_stat_data}}`. Plain JavaScript, loaded by SillyTavern as it is; the logic lives in
// `lib/flow.js` and the client in `lib/mcp-client.js`, which `node --test` checks.

import { McpClient, McpError } from './lib/mcp-client.js';
import { screens } from './screens.js';
import {
    VARIABLE,
    Notices,
    activeSwipe,
    applyResult,
    boundId,
    classifyToolError,
    describeError,
    elicitationResult,
    formFields,
    holdsBinding,
    isAi,
    lastBoundIndex,
    missingTools,
    processRequest,
    SNAPSHOT_GROUP,
    staleFrom,
    switchesOnGroup,
    stateText,
    upToDate,
    wireMessage,
} from './lib/flow.js';

const MODULE = 'synapse';
const DEFAULTS = Object.freeze({ enabled: false, url: 'http://127.0.0.1:8765/mcp', token: '' });
/** The chat metadata key naming the snapshot `vs_stat_data` was read from, and its message. */
const STATE_OF = 'synapse_state_of';
/** A call that has not answered in this long is given up (the chat goes on). */
const CALL_TIMEOUT_MS = 120_000;

const context = () => SillyTavern.getContext();
const notices = new Notices();

let client = null;
let clientKey = '';
let verified = false;
let next = null;
let running = null;
let status = 'idle';

function settings() {
    const all = context().extensionSettings;
    all[MODULE] = Object.assign({}, DEFAULTS, all[MODULE] || {});
    return all[MODULE];
}

function show(text, level = 'info') {
    status = text;
    const line = document.getElementById('synapse_status');
    if (line) {
        line.textContent = text;
        line.dataset.level = level;
    }
}

function warnOnce(kind, text) {
    const shown = notices.report(kind, text);
    if (shown) {
        toastr.warning(shown, 'synapse-mcp', { timeOut: 10000 });
    }
    show(text, 'error');
}

/** Answers an approval (or any form) the server asks for in SillyTavern's own dialog. */
async function elicit(method, params) {
    if (method !== 'elicitation/create') {
        throw new Error(`this client does not answer ${method}`);
    }
    const { Popup, POPUP_TYPE, POPUP_RESULT } = context();
    const fields = formFields(params.requestedSchema);
    const form = document.createElement('div');
    form.className = 'synapse-approval';
    const title = document.createElement('h3');
    title.textContent = 'synapse-mcp asks';
    const message = document.createElement('p');
    message.textContent = params.message || '';
    form.append(title, message);
    const inputs = {};
    for (const field of fields) {
        if (field.name === 'approve' && field.type === 'boolean') {
            continue;
        }
        const label = document.createElement('label');
        label.className = field.type === 'boolean' ? 'checkbox_label' : 'synapse-field';
        const input = field.type === 'enum' ? document.createElement('select') : document.createElement('input');
        input.name = field.name;
        if (field.type === 'boolean') {
            input.type = 'checkbox';
            input.checked = Boolean(field.defaultValue);
        } else if (field.type === 'enum') {
            for (const option of field.options) {
                const element = document.createElement('option');
                element.value = element.textContent = String(option);
                input.append(element);
            }
        } else {
            input.type = field.type === 'number' ? 'number' : 'text';
            input.className = 'text_pole';
        }
        const text = document.createElement('span');
        text.textContent = field.description ? `${field.title}: ${field.description}` : field.title;
        label.append(input, text);
        form.append(label);
        inputs[field.name] = input;
    }
    const popup = new Popup(form, POPUP_TYPE.CONFIRM, '', { okButton: 'Approve', cancelButton: 'Refuse' });
    const answer = await popup.show();
    const values = {};
    for (const [name, input] of Object.entries(inputs)) {
        values[name] = input.type === 'checkbox' ? input.checked : input.value;
    }
    return elicitationResult(fields, values, answer === POPUP_RESULT.AFFIRMATIVE);
}

/** The client for the settings as they are now (a new one when the URL or token changed). */
async function connected() {
    const { url, token } = settings();
    const key = `${url}\n${token}`;
    if (!client || key !== clientKey) {
        if (client) {
            client.close();
        }
        client = new McpClient({
            url,
            token,
            fetch: (...args) => fetch(...args),
            onRequest: elicit,
            clientInfo: { name: 'synapse-sillytavern', version: '0.1.0' },
        });
        clientKey = key;
        verified = false;
    }
    if (!verified) {
        const signal = AbortSignal.timeout(CALL_TIMEOUT_MS);
        let tools = await client.listTools(signal);
        if (missingTools(tools) && switchesOnGroup(tools)) {
            // The workspace has the snapshots group off: switch it on for the workspace, which
            // the server asks the user about (in SillyTavern's dialog), not a model.
            await client.callTool('ToolGroups', { action: 'enable', group: SNAPSHOT_GROUP }, signal);
            tools = await client.listTools(signal);
        }
        const problem = missingTools(tools);
        if (problem) {
            throw new McpError(problem, { kind: 'version' });
        }
        verified = true;
    }
    return client;
}

function characterKey(ctx) {
    if (ctx.groupId) {
        return undefined;
    }
    return ctx.characters?.[ctx.characterId]?.avatar;
}

function chatVariables(ctx) {
    const metadata = ctx.chatMetadata;
    if (!metadata.variables || typeof metadata.variables !== 'object') {
        metadata.variables = {};
    }
    return metadata.variables;
}

/** One pass over the current chat: `job.from` reprocesses from that message on. */
async function run(job) {
    const ctx = context();
    const chatFile = ctx.getCurrentChatId();
    const chat = ctx.chat;
    if (!chatFile || !Array.isArray(chat) || chat.length === 0) {
        return;
    }
    const newest = chat.length - 1;
    if (job.from === undefined && staleFrom(chat) >= 0) {
        job = { from: staleFrom(chat) };
    }
    // Already done: the newest bound swipe, at the same place, is the state the variable holds.
    // (A floor that moved, a message deleted before it, is sent: the server tells.)
    const newestBound = lastBoundIndex(chat);
    if (job.from === undefined && upToDate(chat) && ctx.chatMetadata[STATE_OF] === `${boundId(chat[newestBound])}@${newestBound}`) {
        return;
    }
    const mcp = await connected();
    const characterId = characterKey(ctx);
    const signal = AbortSignal.timeout(CALL_TIMEOUT_MS);
    const reprocess = (fromIndex) => {
        const request = { chatFile, fromIndex, messages: chat.map(wireMessage) };
        if (characterId) {
            request.characterId = characterId;
        }
        return mcp.callTool('SnapshotReprocess', request, signal);
    };
    let result;
    if (job.from !== undefined) {
        result = await reprocess(job.from);
    } else {
        try {
            result = await mcp.callTool('SnapshotProcess', processRequest(chat, { chatFile, characterId }), signal);
        } catch (error) {
            const next = error instanceof McpError && error.kind === 'tool' ? classifyToolError(error.message) : 'report';
            if (next === 'whole') {
                result = await mcp.callTool('SnapshotProcess', processRequest(chat, { chatFile, characterId, whole: true }), signal);
            } else if (next === 'rewritten') {
                // A message was deleted or inserted before the newest floor: where is unknown,
                // so the chat is reprocessed from its start.
                result = await reprocess(0);
            } else {
                throw error;
            }
        }
    }
    const now = context();
    if (now.getCurrentChatId() !== chatFile || now.chat !== chat || chat.length - 1 < newest) {
        // The chat changed while the server worked: its snapshots are stored, and the event of
        // the change processes the chat that is open now.
        return;
    }
    const changed = applyResult(chat, result);
    const variables = chatVariables(now);
    variables[VARIABLE] = stateText(result.vs_stat_data);
    const latest = lastBoundIndex(chat);
    now.chatMetadata[STATE_OF] = latest >= 0 ? `${boundId(chat[latest])}@${latest}` : null;
    await now.saveChat();
    notices.reset();
    const bound = result.latestSnapshotId ? ` (snapshot ${result.latestSnapshotId})` : '';
    const errors = (result.errors || []).length;
    if (result.disabled) {
        show(`processing is off for this ${result.disabled.by}; the state is as it stood${bound}`);
    } else {
        show(`up to date: ${result.bindings.length} message(s) processed, ${changed} swipe(s) bound${bound}${errors ? `, ${errors} call(s) failed` : ''}`);
    }
    if (errors) {
        console.info('[synapse] calls that failed', result.errors);
    }
}

async function drain() {
    while (next) {
        const job = next;
        next = null;
        try {
            await run(job);
        } catch (error) {
            const { url } = settings();
            if (error instanceof McpError) {
                if (error.kind !== 'tool') {
                    verified = false;
                }
                warnOnce(error.kind, describeError(error, url));
            } else if (error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
                warnOnce('timeout', `synapse-mcp did not answer within ${CALL_TIMEOUT_MS / 1000} s; the chat goes on without state.`);
            } else {
                warnOnce('unexpected', describeError(error, url));
                console.warn('[synapse]', error);
            }
        }
    }
    running = null;
}

/**
 * Queues a pass (merged with one already waiting); answers when the queue is empty. `asked`: the
 * user asked for it in a screen, which runs even while processing is off.
 */
function schedule(job = {}, asked = false) {
    if (!settings().enabled && !asked) {
        return Promise.resolve();
    }
    if (next === null) {
        next = { ...job };
    } else if (job.from !== undefined) {
        next.from = next.from === undefined ? job.from : Math.min(next.from, job.from);
    }
    if (!running) {
        running = drain();
    }
    return running;
}

/**
 * True while SillyTavern generates (its stop button shows): a streamed reply is announced with
 * `...` as its text before it is written, so what is received then waits for GENERATION_ENDED.
 */
function generating() {
    const stop = document.getElementById('mes_stop');
    return Boolean(stop) && getComputedStyle(stop).display !== 'none';
}

function onReceived() {
    return generating() ? undefined : schedule();
}

function onSwiped(messageId) {
    const message = context().chat[messageId];
    // A swipe past the last one generates a new reply: MESSAGE_RECEIVED follows it.
    if (generating() || !message || !Array.isArray(message.swipes) || activeSwipe(message) >= message.swipes.length) {
        return undefined;
    }
    return schedule();
}

function onEdited(messageId) {
    const chat = context().chat;
    const message = chat[Number(messageId)];
    if (!isAi(message)) {
        return undefined;
    }
    // A bound message whose text changed: its snapshot and every later one are stale.
    if (holdsBinding(message)) {
        return schedule({ from: Number(messageId) });
    }
    return schedule();
}

function currentState() {
    const variables = context().chatMetadata?.variables;
    const value = variables ? variables[VARIABLE] : undefined;
    return typeof value === 'string' ? value : '';
}

function settingsPanel() {
    const panel = document.createElement('div');
    panel.className = 'synapse-settings';
    panel.innerHTML = `
        <div class="inline-drawer">
            <div class="inline-drawer-toggle inline-drawer-header">
                <b>synapse-mcp state</b>
                <div class="inline-drawer-icon fa-solid fa-circle-chevron-down down"></div>
            </div>
            <div class="inline-drawer-content">
                <label class="checkbox_label" for="synapse_enabled">
                    <input id="synapse_enabled" type="checkbox">
                    <span>Process chats (state snapshots and <code>{{vs_stat_data}}</code>)</span>
                </label>
                <label for="synapse_url">Server URL (Streamable HTTP)</label>
                <input id="synapse_url" class="text_pole" type="url" placeholder="${DEFAULTS.url}">
                <label for="synapse_token">Token (<code>synapse-mcp token add</code>)</label>
                <input id="synapse_token" class="text_pole" type="password" autocomplete="off" placeholder="syn_…">
                <div class="synapse-row">
                    <div id="synapse_check" class="menu_button">Check connection</div>
                    <div id="synapse_process" class="menu_button">Process this chat now</div>
                </div>
                <div class="synapse-row">
                    <div id="synapse_functions" class="menu_button">Function library…</div>
                    <div id="synapse_floors" class="menu_button">Floors of this chat…</div>
                </div>
                <div id="synapse_status" class="synapse-status"></div>
                <details class="synapse-state">
                    <summary>Current state (<code>{{vs_stat_data}}</code>)</summary>
                    <pre id="synapse_state_view"></pre>
                </details>
            </div>
        </div>`;
    return panel;
}

async function checkConnection() {
    const { url } = settings();
    show('checking…');
    try {
        verified = false;
        const mcp = await connected();
        const info = mcp.serverInfo || {};
        show(`connected: ${info.name || 'server'} ${info.version || ''}, MCP ${mcp.protocolVersion}`.trim(), 'ok');
        notices.reset();
    } catch (error) {
        show(describeError(error, url), 'error');
    }
}

function bindPanel() {
    const values = settings();
    const enabled = document.getElementById('synapse_enabled');
    const url = document.getElementById('synapse_url');
    const token = document.getElementById('synapse_token');
    enabled.checked = values.enabled;
    url.value = values.url;
    token.value = values.token;
    const save = () => context().saveSettingsDebounced();
    enabled.addEventListener('change', () => {
        settings().enabled = enabled.checked;
        save();
        if (enabled.checked) {
            schedule();
        } else {
            show('off: no calls are made');
        }
    });
    url.addEventListener('change', () => {
        settings().url = url.value.trim() || DEFAULTS.url;
        save();
    });
    token.addEventListener('change', () => {
        settings().token = token.value.trim();
        save();
    });
    document.getElementById('synapse_check').addEventListener('click', checkConnection);
    document.getElementById('synapse_process').addEventListener('click', () => schedule());
    const manage = screens({
        context,
        call: async (name, args) => (await connected()).callTool(name, args, AbortSignal.timeout(CALL_TIMEOUT_MS)),
        characterId: () => characterKey(context()),
        reprocess: (from) => schedule({ from }, true),
    });
    const opening = (open) => async () => {
        try {
            await open();
        } catch (error) {
            show(describeError(error, settings().url), 'error');
        }
    };
    document.getElementById('synapse_functions').addEventListener('click', opening(manage.functions));
    document.getElementById('synapse_floors').addEventListener('click', opening(manage.floors));
    document.querySelector('.synapse-state').addEventListener('toggle', refreshStateView);
}

function refreshStateView() {
    const view = document.getElementById('synapse_state_view');
    if (!view) {
        return;
    }
    const text = currentState();
    try {
        view.textContent = text ? JSON.stringify(JSON.parse(text), null, 2) : '(none yet)';
    } catch {
        view.textContent = text;
    }
}

function start() {
    const ctx = context();
    settings();
    const host = document.getElementById('extensions_settings2') || document.getElementById('extensions_settings');
    host.append(settingsPanel());
    bindPanel();
    ctx.registerMacro(VARIABLE, () => currentState());
    const { eventSource, eventTypes } = ctx;
    const on = (type, handler) => eventSource.on(type, (...args) => {
        console.debug('[synapse] event', type, ...args);
        return handler(...args);
    });
    on(eventTypes.MESSAGE_RECEIVED, onReceived);
    on(eventTypes.GENERATION_ENDED, () => schedule());
    on(eventTypes.MESSAGE_SWIPED, onSwiped);
    on(eventTypes.MESSAGE_EDITED, onEdited);
    on(eventTypes.MESSAGE_DELETED, () => schedule());
    on(eventTypes.CHAT_CHANGED, () => {
        refreshStateView();
        return schedule();
    });
    // For tests and the console: wait until every queued pass is done.
    globalThis.synapseExtension = { idle: () => running || Promise.resolve(), status: () => status };
    show(settings().enabled ? 'on' : 'off: no calls are made');
}

start();
