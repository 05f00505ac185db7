// The extension's logic over a SillyTavern chat, with no SillyTavern in it (so `node --test`
// runs it): which messages an event sends to `SnapshotProcess`, how the returned bindings are
// written back into the chat, what an approval form looks like, and when to say something to
// the user.

/** The key of `message.extra` (and of `swipe_info[n].extra`) holding a swipe's snapshot id. */
export const BINDING_KEY = 'synapse_snapshot';
/**
 * The key beside it naming the swipe the id was bound to: SillyTavern starts a new swipe with a
 * copy of the active swipe's `extra`, and a copied id (its swipe number differs) binds nothing.
 */
export const BINDING_SWIPE_KEY = 'synapse_swipe';
/**
 * The key beside it holding a digest of the text the snapshot was made from: SillyTavern
 * announces a streamed swipe while its text is still `...`, and an edited text is not the one
 * the snapshot was made from. A binding whose text changed binds nothing.
 */
export const BINDING_TEXT_KEY = 'synapse_text';
/** The field of `swipes_info[n]` the server reads a binding from. */
export const SERVER_BINDING_FIELD = 'st_var_system_snapshot_id';
/** The chat variable and macro holding the newest snapshot's JSON. */
export const VARIABLE = 'vs_stat_data';

export function isAi(message) {
    return Boolean(message) && !message.is_user && !message.is_system;
}

export function activeSwipe(message) {
    const swipe = Number(message.swipe_id);
    return Number.isInteger(swipe) && swipe >= 0 ? swipe : 0;
}

/** A short digest of a text (FNV-1a over its UTF-16 code units, and its length). */
export function textDigest(text) {
    let hash = 0x811c9dc5;
    for (let index = 0; index < text.length; index++) {
        hash ^= text.charCodeAt(index);
        hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    return `${hash.toString(16).padStart(8, '0')}-${text.length}`;
}

/** The text of a swipe of a message (the active one is `mes`). */
export function swipeText(message, swipe = activeSwipe(message)) {
    const text = swipe === activeSwipe(message) ? message.mes : message.swipes?.[swipe];
    return typeof text === 'string' ? text : '';
}

function bindingIn(extra, swipe, text) {
    const id = extra && typeof extra === 'object' ? extra[BINDING_KEY] : undefined;
    const valid = typeof id === 'string' && id && extra[BINDING_SWIPE_KEY] === swipe && extra[BINDING_TEXT_KEY] === textDigest(text);
    return valid ? id : null;
}

/**
 * The snapshot id bound to a swipe of a message (the active swipe's `extra` wins), if it was
 * bound to that swipe and made from the text the swipe has now.
 */
export function boundId(message, swipe = activeSwipe(message)) {
    const text = swipeText(message, swipe);
    const fromExtra = swipe === activeSwipe(message) ? bindingIn(message.extra, swipe, text) : null;
    const fromInfo = Array.isArray(message.swipe_info) ? bindingIn(message.swipe_info[swipe]?.extra, swipe, text) : null;
    return fromExtra || fromInfo;
}

/** True when any swipe of the message holds a snapshot id, valid or not (an edit made it stale). */
export function holdsBinding(message) {
    const held = (extra) => Boolean(extra && typeof extra === 'object' && extra[BINDING_KEY]);
    return held(message.extra) || (Array.isArray(message.swipe_info) && message.swipe_info.some((info) => held(info?.extra)));
}

function writeBinding(extra, swipe, id, text) {
    if (id) {
        extra[BINDING_KEY] = id;
        extra[BINDING_SWIPE_KEY] = swipe;
        extra[BINDING_TEXT_KEY] = textDigest(text);
    } else {
        delete extra[BINDING_KEY];
        delete extra[BINDING_SWIPE_KEY];
        delete extra[BINDING_TEXT_KEY];
    }
}

/** A message as `SnapshotProcess` takes it: the active text, and every swipe's binding. */
export function wireMessage(message) {
    const swipes = Array.isArray(message.swipes) ? message.swipes.length : 0;
    const count = Math.max(swipes, activeSwipe(message) + 1, 1);
    const swipesInfo = [];
    for (let swipe = 0; swipe < count; swipe++) {
        const id = boundId(message, swipe);
        swipesInfo.push(id ? { [SERVER_BINDING_FIELD]: id } : {});
    }
    const wire = {
        is_user: Boolean(message.is_user),
        is_system: Boolean(message.is_system),
        mes: typeof message.mes === 'string' ? message.mes : '',
        swipe_id: activeSwipe(message),
        swipes_info: swipesInfo,
    };
    if (typeof message.send_date === 'number' || typeof message.send_date === 'string') {
        wire.send_date = message.send_date;
    }
    return wire;
}

/** The index of the newest AI message whose active swipe is bound, or -1. */
export function lastBoundIndex(chat) {
    for (let index = chat.length - 1; index >= 0; index--) {
        if (isAi(chat[index]) && boundId(chat[index])) {
            return index;
        }
    }
    return -1;
}

/**
 * What an event sends: the messages from the newest bound AI message on (`firstIndex` says where
 * they start in the chat), or the whole chat when `whole` or when nothing is bound yet. A reply
 * in a 1,000-message chat sends its anchor, the user's message and the reply.
 */
export function processRequest(chat, { chatFile, characterId, whole = false }) {
    const anchor = whole ? -1 : lastBoundIndex(chat);
    const firstIndex = Math.max(anchor, 0);
    const request = {
        chatFile,
        messages: chat.slice(firstIndex).map(wireMessage),
    };
    if (firstIndex > 0) {
        request.firstIndex = firstIndex;
    }
    if (characterId !== undefined && characterId !== null && characterId !== '') {
        request.characterId = String(characterId);
    }
    return request;
}

/**
 * The earliest AI message before the newest bound one whose binding went stale — it holds a
 * snapshot id, but its text or active swipe is no longer the one the snapshot was made from (an
 * edit or a swipe made while the extension was off or the server down) — or -1. Every floor from
 * there on is stale: reprocess from it.
 */
export function staleFrom(chat) {
    const anchor = lastBoundIndex(chat);
    for (let index = 0; index < anchor; index++) {
        const message = chat[index];
        if (isAi(message) && holdsBinding(message) && !boundId(message)) {
            return index;
        }
    }
    return -1;
}

/** True when the chat has nothing to process: no AI message after the newest bound one. */
export function upToDate(chat) {
    const anchor = lastBoundIndex(chat);
    for (let index = chat.length - 1; index > anchor; index--) {
        if (isAi(chat[index])) {
            return false;
        }
    }
    return anchor >= 0;
}

function setBinding(message, swipe, id) {
    const text = swipeText(message, swipe);
    if (swipe === activeSwipe(message)) {
        message.extra = message.extra && typeof message.extra === 'object' ? message.extra : {};
        writeBinding(message.extra, swipe, id, text);
    }
    const hasSwipes = Array.isArray(message.swipes) && message.swipes.length > swipe;
    if (!Array.isArray(message.swipe_info)) {
        if (!hasSwipes) {
            return;
        }
        message.swipe_info = [];
    }
    while (message.swipe_info.length <= swipe) {
        message.swipe_info.push({ extra: {} });
    }
    const info = message.swipe_info[swipe] && typeof message.swipe_info[swipe] === 'object' ? message.swipe_info[swipe] : {};
    message.swipe_info[swipe] = info;
    info.extra = info.extra && typeof info.extra === 'object' ? info.extra : {};
    writeBinding(info.extra, swipe, id, text);
}

/**
 * Writes a `SnapshotProcess` (or `SnapshotReprocess`) result into the chat: each binding into
 * its swipe's `extra` (the active swipe's `message.extra` too), each dropped or cleared id out
 * of the swipe that still holds it. A binding whose message is gone is skipped. Answers how many
 * swipes changed.
 */
export function applyResult(chat, result) {
    let changed = 0;
    const unbind = (binding) => {
        const message = chat[binding.messageIndex];
        const swipe = binding.swipeId;
        const held = message && [swipe === activeSwipe(message) ? message.extra : null, message.swipe_info?.[swipe]?.extra]
            .some((extra) => extra && extra[BINDING_KEY] === binding.snapshotId);
        if (held) {
            setBinding(message, binding.swipeId, null);
            changed++;
        }
    };
    for (const binding of result.dropped || []) {
        unbind(binding);
    }
    for (const binding of result.cleared || []) {
        unbind(binding);
    }
    for (const binding of result.bindings || []) {
        const message = chat[binding.messageIndex];
        if (!message) {
            continue;
        }
        setBinding(message, binding.swipeId, binding.snapshotId);
        changed++;
    }
    return changed;
}

/** The value of `{{vs_stat_data}}`: the state as JSON text. */
export function stateText(state) {
    return JSON.stringify(state ?? {});
}

/**
 * What a server error means for the next call: `rewritten` (messages before the tail's anchor
 * were deleted or inserted: every later floor is stale, reprocess the chat), `whole` (the
 * tail's anchor is not stored: send the whole chat) or `report` (tell the user).
 */
export function classifyToolError(message) {
    if (/was made for message \d+/.test(message)) {
        return 'rewritten';
    }
    return /send the whole chat/i.test(message) ? 'whole' : 'report';
}

/**
 * An elicitation's form, as fields to draw: booleans are check boxes, strings and numbers text
 * fields, enums choices. The server's approval form is `{approve, remember, reason}`.
 */
export function formFields(schema) {
    const properties = (schema && schema.properties) || {};
    const required = new Set((schema && schema.required) || []);
    return Object.entries(properties).map(([name, property]) => ({
        name,
        title: property.title || name,
        description: property.description || '',
        type: Array.isArray(property.enum) ? 'enum' : (property.type === 'boolean' ? 'boolean' : (property.type === 'integer' || property.type === 'number' ? 'number' : 'string')),
        options: Array.isArray(property.enum) ? property.enum : undefined,
        defaultValue: property.default,
        required: required.has(name),
    }));
}

/**
 * The elicitation result for a form the user answered (`values` by field name) or dismissed
 * (`values` null). A form with an `approve` box answers accepted with `approve: true` when
 * the user confirmed it, so a plain Yes/No dialog is enough.
 */
export function elicitationResult(fields, values, confirmed) {
    if (!confirmed) {
        return { action: 'decline' };
    }
    const content = {};
    for (const field of fields) {
        let value = values ? values[field.name] : undefined;
        if (field.name === 'approve' && field.type === 'boolean') {
            value = true;
        }
        if (value === undefined || value === '') {
            if (field.defaultValue !== undefined) {
                content[field.name] = field.defaultValue;
            } else if (field.type === 'boolean') {
                content[field.name] = false;
            }
            continue;
        }
        if (field.type === 'number') {
            const number = Number(value);
            if (!Number.isNaN(number)) {
                content[field.name] = number;
            }
        } else if (field.type === 'boolean') {
            content[field.name] = Boolean(value);
        } else {
            content[field.name] = String(value);
        }
    }
    return { action: 'accept', content };
}

/**
 * Says each kind of trouble once: answers the text to show for an error, or null when the same
 * kind was shown already and nothing worked since. `reset` after a call that worked.
 */
export class Notices {
    constructor() {
        this.shown = new Set();
    }

    report(kind, text) {
        if (this.shown.has(kind)) {
            return null;
        }
        this.shown.add(kind);
        return text;
    }

    reset() {
        this.shown.clear();
    }
}

/** The message shown for an error of the client, by kind, in the user's words. */
export function describeError(error, url) {
    switch (error && error.kind) {
    case 'unreachable':
        return `synapse-mcp is not reachable at ${url}. The chat goes on without state; start the server (synapse-mcp serve --http …), check the URL, and that it allows this page (--allowed-origin ${globalThis.location ? globalThis.location.origin : 'ORIGIN'}; a synapse-mcp older than the extension allows none).`;
    case 'auth':
        return `synapse-mcp refused the token (${error.status}). Set a token made with \`synapse-mcp token add\` in the extension's settings.`;
    case 'version':
        return `This synapse-mcp server is of another version: ${error.message}. The chat goes on without state.`;
    case 'http':
        return `synapse-mcp answered ${error.status}: ${error.message}. If it says the Origin is not allowed, start it with --allowed-origin set to this page's origin.`;
    default:
        return `synapse-mcp: ${error && error.message ? error.message : error}`;
    }
}

/** The server's tool group holding the snapshot tools. */
export const SNAPSHOT_GROUP = 'snapshots';

/**
 * True when the snapshot tools are missing but the server offers `ToolGroups`, which can switch
 * their group on for the workspace (with the user's approval).
 */
export function switchesOnGroup(tools) {
    return !tools.some((tool) => tool.name === 'SnapshotProcess') && tools.some((tool) => tool.name === 'ToolGroups');
}

/** The tools the extension calls; a server without them is of another version (or has the group off). */
export const REQUIRED_TOOLS = ['SnapshotProcess', 'SnapshotReprocess', 'SnapshotGet'];

/** Checks a `tools/list` answer: null when fine, else what is missing. */
export function missingTools(tools) {
    const names = new Set(tools.map((tool) => tool.name));
    const missing = REQUIRED_TOOLS.filter((name) => !names.has(name));
    if (missing.length > 0) {
        return `the server lists no ${missing.join(', ')} (is the snapshots group switched off?)`;
    }
    const process = tools.find((tool) => tool.name === 'SnapshotProcess');
    if (!process.inputSchema?.properties?.firstIndex) {
        return 'its SnapshotProcess takes no firstIndex (update synapse-mcp)';
    }
    return null;
}
