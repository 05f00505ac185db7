// The extension's management screens, opened from its panel in SillyTavern's dialogs: the
// function library (list, add, edit, delete, enable, reorder, move between the global library
// and the character's, import and export, test a pattern against a text) and the open chat's
// floors (list, view, diff, edit, save as a global snapshot, export and import the state with
// MVU's metadata stripped, reprocess from a floor), and the processing switch of the chat and
// its character. Every write is a tool call, asked of the user when the server's policy asks.

import {
    fileName,
    floorLabel,
    libraryOf,
    moveArguments,
    newFunction,
    ownIds,
    parseExport,
    parseFunction,
    parseState,
    previousFloor,
    reorderedIds,
    scopeArguments,
} from './lib/manage.js';

function element(tag, attributes = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes)) {
        if (key === 'onclick' || key === 'onchange') {
            node.addEventListener(key.slice(2), value);
        } else if (key === 'text') {
            node.textContent = value;
        } else if (value !== undefined && value !== null && value !== false) {
            node.setAttribute(key, value === true ? '' : String(value));
        }
    }
    node.append(...children);
    return node;
}

const button = (text, onclick, name) => element('div', { class: 'menu_button', 'data-action': name, onclick }, text);

function download(name, value) {
    const blob = new Blob([JSON.stringify(value, null, 2)], { type: 'application/json' });
    const link = element('a', { href: URL.createObjectURL(blob), download: name });
    document.body.append(link);
    link.click();
    link.remove();
}

function pickFile() {
    return new Promise((done) => {
        const input = element('input', { type: 'file', accept: '.json,application/json' });
        input.addEventListener('change', async () => done(input.files[0] ? await input.files[0].text() : null));
        input.click();
    });
}

/**
 * @param {object} host
 * @param {() => any} host.context SillyTavern's context
 * @param {(name: string, args: object) => Promise<any>} host.call a tool call
 * @param {() => string|undefined} host.characterId the open character's card name
 * @param {(from: number) => Promise<void>} host.reprocess reprocess the open chat from a message
 */
export function screens(host) {
    const { Popup, POPUP_TYPE } = host.context();
    const open = (title, body, name) => {
        const root = element('div', { class: 'synapse-screen', 'data-screen': name }, element('h3', { text: title }), body);
        const popup = new Popup(root, POPUP_TYPE.TEXT, '', { wide: true, large: true, allowVerticalScrolling: true, okButton: 'Close' });
        popup.show();
        return root;
    };
    const line = (root) => root.querySelector('.synapse-screen-status');
    const say = (root, text, level = 'info') => {
        const status = line(root);
        status.textContent = text;
        status.dataset.level = level;
    };
    const guarded = (root, action) => async (...args) => {
        try {
            await action(...args);
        } catch (error) {
            say(root, error && error.message ? error.message : String(error), 'error');
        }
    };

    async function functions() {
        const characterId = host.characterId();
        let scope = 'global';
        let listed = { global: [], local: [] };
        const list = element('div', { class: 'synapse-list' });
        const editor = element('textarea', { class: 'text_pole synapse-code', rows: 12, spellcheck: 'false', 'data-field': 'function' });
        const testText = element('textarea', { class: 'text_pole', rows: 3, 'data-field': 'test-text' });
        testText.value = '@.SET("hero.hp", 5); @.DOUBLE("hero.hp");';
        const unsaved = element('input', { type: 'checkbox', 'data-field': 'test-unsaved' });
        const testOut = element('pre', { class: 'synapse-output', 'data-field': 'test-result' });
        const scopeSelect = element('select', { class: 'text_pole', 'data-field': 'scope' },
            element('option', { value: 'global', text: 'Global library' }),
            element('option', { value: 'character', text: characterId ? `${characterId}'s library` : 'No character open', disabled: !characterId }));
        const root = open('Function library', element('div', {},
            element('div', { class: 'synapse-row' }, scopeSelect,
                button('New', () => { editor.value = JSON.stringify(newFunction(), null, 2); }, 'new'),
                button('Import…', () => importFile(), 'import'),
                button('Export', () => exportAll(), 'export')),
            list,
            element('h4', { text: 'Edit (the function as JSON)' }), editor,
            element('div', { class: 'synapse-row' }, button('Save', () => save(), 'save')),
            element('h4', { text: 'Test a reply against the library' }), testText,
            element('label', { class: 'checkbox_label' }, unsaved, element('span', { text: 'with the function being edited (unsaved)' })),
            element('div', { class: 'synapse-row' }, button('Test', () => runTest(), 'test')),
            testOut,
            element('div', { class: 'synapse-screen-status' })), 'functions');
        const scoped = () => scopeArguments(scope, characterId);
        const refresh = guarded(root, async () => {
            listed = await host.call('FunctionList', scoped());
            list.replaceChildren();
            const library = libraryOf(listed, scope);
            for (const item of library) {
                const enabled = element('input', { type: 'checkbox', 'data-field': 'enabled', checked: item.enabled });
                enabled.addEventListener('change', guarded(root, async () => {
                    await host.call('FunctionEnable', { ids: [item.id], enabled: enabled.checked, ...scoped() });
                    say(root, `${item.name} ${enabled.checked ? 'on' : 'off'}`);
                }));
                const actions = [
                    button('↑', guarded(root, () => reorder(library, item, -1)), 'up'),
                    button('↓', guarded(root, () => reorder(library, item, 1)), 'down'),
                    button('Edit', () => { editor.value = JSON.stringify(item, null, 2); }, 'edit'),
                ];
                if (!item.builtin) {
                    actions.push(
                        button(scope === 'global' ? 'To character' : 'To global', guarded(root, async () => {
                            if (!characterId) {
                                throw new Error('open a character first: its library is where the function goes');
                            }
                            await host.call('FunctionMove', moveArguments(item, scope, characterId));
                            say(root, `${item.name} moved`);
                            await refresh();
                        }), 'move'),
                        button('Delete', guarded(root, async () => {
                            await host.call('FunctionRemove', { id: item.id, ...scoped() });
                            say(root, `${item.name} deleted`);
                            await refresh();
                        }), 'delete'));
                }
                list.append(element('div', { class: 'synapse-item', 'data-name': item.name }, enabled,
                    element('span', { class: 'synapse-item-name', text: `${item.name} (${item.type}${item.builtin ? ', built-in' : ''})` }),
                    element('span', { class: 'synapse-item-actions' }, ...actions)));
            }
            say(root, `${library.length} function(s)`);
        });
        const reorder = async (library, item, step) => {
            const ids = reorderedIds(library, item.id, step);
            if (!ids) {
                return;
            }
            await host.call('FunctionReorder', { ids, ...scoped() });
            await refresh();
        };
        const save = guarded(root, async () => {
            const saved = await host.call('FunctionUpsert', { function: parseFunction(editor.value), ...scoped() });
            say(root, `saved ${saved.name || ''}`.trim());
            await refresh();
        });
        const importFile = guarded(root, async () => {
            const text = await pickFile();
            if (text === null) {
                return;
            }
            const imported = await host.call('FunctionImport', { data: parseExport(text), ...scoped() });
            say(root, `imported ${(imported.imported || []).length} function(s), switched off until you enable them`);
            await refresh();
        });
        const exportAll = guarded(root, async () => {
            // The built-ins are in every library already (and an import refuses them).
            const ids = ownIds(libraryOf(listed, scope));
            if (ids.length === 0) {
                throw new Error('this library has no functions of your own to export');
            }
            const exported = await host.call('FunctionExport', { ids, ...scoped() });
            download(fileName('functions', scope === 'global' ? 'global' : characterId), exported);
            say(root, 'exported');
        });
        const runTest = guarded(root, async () => {
            const args = { text: testText.value, ...scoped() };
            if (unsaved.checked) {
                args.function = parseFunction(editor.value);
            }
            const result = await host.call('FunctionTest', args);
            testOut.textContent = JSON.stringify(result, null, 2);
            say(root, `${(result.errors || []).length} error(s)`);
        });
        scopeSelect.addEventListener('change', () => {
            scope = scopeSelect.value;
            refresh();
        });
        await refresh();
    }

    async function floors() {
        const context = host.context();
        const chatFile = context.getCurrentChatId();
        if (!chatFile) {
            throw new Error('open a chat first');
        }
        const characterId = host.characterId();
        let page = null;
        let selected = null;
        const list = element('div', { class: 'synapse-list' });
        const state = element('textarea', { class: 'text_pole synapse-code', rows: 14, spellcheck: 'false', 'data-field': 'state' });
        const diff = element('pre', { class: 'synapse-output', 'data-field': 'diff' });
        const strip = element('input', { type: 'checkbox', 'data-field': 'mvu-strip', checked: true });
        const label = element('input', { type: 'text', class: 'text_pole', placeholder: 'label', 'data-field': 'label' });
        const chatSwitch = element('select', { class: 'text_pole', 'data-field': 'chat-switch' },
            ...['inherit', 'on', 'off'].map((value) => element('option', { value, text: `this chat: ${value}` })));
        const characterSwitch = element('select', { class: 'text_pole', 'data-field': 'character-switch', disabled: !characterId },
            ...['inherit', 'on', 'off'].map((value) => element('option', { value, text: `its character: ${value}` })));
        const selection = element('div', { class: 'synapse-selected', 'data-field': 'selected' });
        const root = open(`Floors of ${chatFile}`, element('div', {},
            element('div', { class: 'synapse-row' }, chatSwitch, characterSwitch),
            element('div', { class: 'synapse-row' },
                button('Earlier', () => page?.previous && load(page.previous.fromIndex), 'earlier'),
                button('Later', () => page?.next && load(page.next.fromIndex), 'later')),
            list, selection, state,
            element('div', { class: 'synapse-row' },
                button('Save the edit', () => saveEdit(), 'save-edit'),
                button('Diff with the floor before', () => showDiff(), 'diff'),
                button('Reprocess from here', () => reprocess(), 'reprocess')),
            element('div', { class: 'synapse-row' },
                button('Export JSON', () => exportState(), 'export'),
                button('Import JSON…', () => importState(), 'import'),
                element('label', { class: 'checkbox_label' }, strip, element('span', { text: 'strip MVU metadata' }))),
            element('div', { class: 'synapse-row' }, label, button('Save as global snapshot', () => saveGlobal(), 'save-global')),
            diff,
            element('div', { class: 'synapse-screen-status' })), 'floors');
        const selectFloor = guarded(root, async (floor) => {
            selected = floor;
            const stored = await host.call('SnapshotGet', { id: floor.snapshotId });
            selection.textContent = `${floorLabel(floor)} — ${floor.snapshotId}`;
            state.value = JSON.stringify(stored.snapshot, null, 2);
            diff.textContent = '';
        });
        const load = guarded(root, async (fromIndex) => {
            page = await host.call('SnapshotList', fromIndex === undefined ? { chatFile } : { chatFile, fromIndex });
            list.replaceChildren(...page.floors.map((floor) => element('div', { class: 'synapse-item synapse-floor', 'data-snapshot': floor.snapshotId, onclick: () => selectFloor(floor) },
                element('span', { text: floorLabel(floor) }))));
            say(root, `${page.total} floor(s); ${page.earlier} earlier, ${page.later} later`);
        });
        const need = () => {
            if (!selected) {
                throw new Error('select a floor first');
            }
            return selected;
        };
        const saveEdit = guarded(root, async () => {
            await host.call('SnapshotUpdate', { id: need().snapshotId, snapshot: parseState(state.value) });
            say(root, 'saved; the later floors are as they were: reprocess from the next one to build on the edit');
        });
        const showDiff = guarded(root, async () => {
            const floor = need();
            const before = previousFloor(page.floors, floor);
            const from = before ? before.snapshotId : (characterId ? `template:${characterId}` : null);
            if (!from) {
                throw new Error('no floor before this one on this page (and no character template)');
            }
            diff.textContent = JSON.stringify(await host.call('SnapshotDiff', { from, to: floor.snapshotId }), null, 2);
        });
        const reprocess = guarded(root, async () => {
            const floor = need();
            await host.reprocess(floor.messageIndex ?? 0);
            say(root, `reprocessed from message ${floor.messageIndex ?? 0}`);
            await load();
        });
        const exportState = guarded(root, async () => {
            const floor = need();
            download(fileName(chatFile, 'floor', floor.messageIndex ?? 'none'), parseState(state.value));
        });
        const importState = guarded(root, async () => {
            const floor = need();
            const text = await pickFile();
            if (text === null) {
                return;
            }
            await host.call('SnapshotUpdate', { id: floor.snapshotId, snapshot: parseState(text), mvuStrip: strip.checked });
            await selectFloor(floor);
            say(root, 'imported into the floor');
        });
        const saveGlobal = guarded(root, async () => {
            const floor = need();
            if (!label.value.trim()) {
                throw new Error('give the global snapshot a label');
            }
            await host.call('SnapshotGlobalSave', { label: label.value.trim(), from: floor.snapshotId });
            say(root, `saved as the global snapshot "${label.value.trim()}"`);
        });
        chatSwitch.addEventListener('change', guarded(root, async () => {
            await host.call('SnapshotEnable', { chatFile, setting: chatSwitch.value });
            say(root, `processing for this chat: ${chatSwitch.value}`);
        }));
        characterSwitch.addEventListener('change', guarded(root, async () => {
            await host.call('SnapshotEnable', { characterId, setting: characterSwitch.value });
            say(root, `processing for ${characterId}: ${characterSwitch.value}`);
        }));
        await load();
    }

    return { functions, floors };
}
