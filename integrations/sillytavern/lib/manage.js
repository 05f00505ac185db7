// The logic of the extension's management screens (the function library and a chat's floors),
// with no DOM in it: the arguments of each tool call the screens make, and the checks of what
// the user pastes or imports, so `node --test` covers them.

/** `characterId` for a library scope: `undefined` for the global library. */
export function scopeArguments(scope, characterId) {
    return scope === 'character' && characterId ? { characterId } : {};
}

/** The functions of a `FunctionList` answer for a scope, in running order. */
export function libraryOf(listed, scope) {
    const functions = scope === 'character' ? listed.local || [] : listed.global || [];
    return [...functions].sort((a, b) => (a.order ?? 0) - (b.order ?? 0));
}

/**
 * The `FunctionReorder` ids that move one function up (`-1`) or down (`+1`): every function of
 * the library in its new order. Null when it cannot move that way.
 */
export function reorderedIds(functions, id, step) {
    const ids = functions.map((item) => item.id);
    const at = ids.indexOf(id);
    const to = at + step;
    if (at < 0 || to < 0 || to >= ids.length) {
        return null;
    }
    [ids[at], ids[to]] = [ids[to], ids[at]];
    return ids;
}

/** The `FunctionMove` arguments that move a function to the other library. */
export function moveArguments(item, scope, characterId) {
    if (scope === 'character') {
        return { id: item.id, characterId };
    }
    return { id: item.id, toCharacterId: characterId };
}

/** A new function to start editing from. */
export function newFunction() {
    return {
        name: 'DOUBLE',
        type: 'active',
        enabled: true,
        description: 'Doubles a number at a path: @.DOUBLE("hero.gold");',
        pattern: '@\\.DOUBLE\\("([^"]+)"\\);',
        executor: 'const path = args[0];\n_.set(snapshot, path, (_.get(snapshot, path) || 0) * 2);\nreturn snapshot;',
    };
}

/** The function being edited, as `FunctionUpsert` takes it, from the editor's JSON text. */
export function parseFunction(text) {
    let parsed;
    try {
        parsed = JSON.parse(text);
    } catch (error) {
        throw new Error(`the function is not JSON: ${error.message}`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
        throw new Error('the function must be a JSON object ({"name": …, "type": "active", "pattern": …, "executor": …})');
    }
    return editableFunction(parsed);
}

/** A listed function in the shape `FunctionUpsert` takes: without what `FunctionList` adds for display. */
export function editableFunction(item) {
    const editable = { ...item };
    for (const key of ['builtin', 'signature', 'example', 'characterId', 'local']) {
        delete editable[key];
    }
    return editable;
}

/** The ids of a library's own functions (the built-ins are in every library, and an import refuses them). */
export function ownIds(functions) {
    return functions.filter((item) => !item.builtin).map((item) => item.id);
}

/** An export file's text checked before `FunctionImport` (the server checks it again). */
export function parseExport(text) {
    let parsed;
    try {
        parsed = JSON.parse(text);
    } catch (error) {
        throw new Error(`the file is not JSON: ${error.message}`);
    }
    if (!parsed || !Array.isArray(parsed.functions)) {
        throw new Error('the file is not a function export: it needs {"version": "1.0", "functions": [...]}');
    }
    return parsed;
}

/** A floor state the user pasted or imported, checked before `SnapshotUpdate`. */
export function parseState(text) {
    let parsed;
    try {
        parsed = JSON.parse(text);
    } catch (error) {
        throw new Error(`the state is not JSON: ${error.message}`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
        throw new Error('the state must be a JSON object');
    }
    return parsed;
}

/**
 * A chat's messages, as `SnapshotReprocess` takes them, from what the user pasted: a JSON array,
 * an object with `messages`, or a SillyTavern chat file (JSON Lines, its first line the chat's
 * metadata, which is left out).
 */
export function parseMessages(text) {
    const trimmed = text.trim();
    if (!trimmed) {
        throw new Error('paste the chat\'s messages first: a JSON array, or the chat file (.jsonl)');
    }
    let messages;
    try {
        const parsed = JSON.parse(trimmed);
        messages = Array.isArray(parsed) ? parsed : parsed && parsed.messages;
    } catch {
        messages = trimmed.split('\n').filter((line) => line.trim()).map((line, index) => {
            try {
                return JSON.parse(line);
            } catch (error) {
                throw new Error(`line ${index + 1} of the chat is not JSON: ${error.message}`);
            }
        });
    }
    if (!Array.isArray(messages)) {
        throw new Error('the messages must be a JSON array, {"messages": [...]}, or a chat file (.jsonl)');
    }
    const isHeader = (line) => line && typeof line === 'object' && 'chat_metadata' in line && !('mes' in line);
    return messages.filter((message, index) => !(index === 0 && isHeader(message)));
}

/** A file name for an export: letters, digits, dots and dashes only. */
export function fileName(...parts) {
    return `${parts.join('-').replace(/[^\p{L}\p{N}.-]+/gu, '_').slice(0, 120)}.json`;
}

/**
 * The floor before `floor` in a `SnapshotList` page (the newest snapshot of an earlier message),
 * for a diff; null for the first one.
 */
export function previousFloor(floors, floor) {
    const earlier = floors.filter((item) => (item.messageIndex ?? -1) < (floor.messageIndex ?? -1));
    return earlier.length > 0 ? earlier[earlier.length - 1] : null;
}

/** One line per floor for the list: `#4 swipe 1 · hero.hp = 5`. */
export function floorLabel(floor) {
    const where = floor.messageIndex === undefined ? 'no message' : `#${floor.messageIndex}`;
    const swipe = floor.swipeId ? ` swipe ${floor.swipeId}` : '';
    return `${where}${swipe} · ${floor.summary || '(no change)'}`;
}
