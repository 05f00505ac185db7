// The extension's chat logic: what an event sends, how results are written back, approvals
// and notices.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
    Notices,
    applyResult,
    boundId,
    classifyToolError,
    describeError,
    elicitationResult,
    formFields,
    holdsBinding,
    lastBoundIndex,
    missingTools,
    processRequest,
    stateText,
    staleFrom,
    switchesOnGroup,
    textDigest,
    upToDate,
    wireMessage,
} from '../lib/flow.js';

const user = (mes) => ({ is_user: true, mes });
const bound = (id, text, swipe = 0) => ({ synapse_snapshot: id, synapse_swipe: swipe, synapse_text: textDigest(text) });
const reply = (mes, id) => ({
    is_user: false,
    mes,
    swipe_id: 0,
    swipes: [mes],
    swipe_info: [{ send_date: 'now', extra: id ? bound(id, mes) : {} }],
    extra: id ? bound(id, mes) : {},
});

test('a message goes on the wire with its active text and every swipe binding', () => {
    const message = {
        is_user: false,
        mes: 'second',
        swipe_id: 1,
        swipes: ['first', 'second', 'third'],
        swipe_info: [{ extra: bound('A', 'first', 0) }, { extra: {} }, {}],
        extra: bound('B', 'second', 1),
        send_date: 'November 27, 2026 5:47pm',
    };
    assert.deepEqual(wireMessage(message), {
        is_user: false,
        is_system: false,
        mes: 'second',
        swipe_id: 1,
        swipes_info: [{ st_var_system_snapshot_id: 'A' }, { st_var_system_snapshot_id: 'B' }, {}],
        send_date: 'November 27, 2026 5:47pm',
    });
    assert.deepEqual(wireMessage(user('hi')), {
        is_user: true, is_system: false, mes: 'hi', swipe_id: 0, swipes_info: [{}],
    });
});

test('the first event of a chat sends the whole chat', () => {
    const chat = [reply('hello'), user('go'), reply('@.SET("hero.hp", 5);')];
    assert.equal(lastBoundIndex(chat), -1);
    const request = processRequest(chat, { chatFile: 'Hero - 1', characterId: 'Hero.png' });
    assert.deepEqual(request, {
        chatFile: 'Hero - 1',
        characterId: 'Hero.png',
        messages: chat.map(wireMessage),
    });
});

test('a new reply sends from the newest bound message on', () => {
    const chat = [];
    for (let index = 0; index < 500; index++) {
        chat.push(reply(`r${index}`, `id${index}`), user(`u${index}`));
    }
    chat.push(reply('new'));
    const request = processRequest(chat, { chatFile: 'long' });
    assert.equal(request.firstIndex, 998);
    assert.deepEqual(request.messages, [wireMessage(chat[998]), wireMessage(chat[999]), wireMessage(chat[1000])]);
    assert.equal(request.characterId, undefined);
    assert.deepEqual(processRequest(chat, { chatFile: 'long', whole: true }).messages.length, 1001);
});

test('a swipe to an unbound reply rebases on the bound one before it', () => {
    const chat = [reply('a', 'A'), user('u'), reply('b', 'B')];
    chat[2].swipes.push('b2');
    chat[2].swipe_info.push({ extra: {} });
    chat[2].swipe_id = 1;
    chat[2].mes = 'b2';
    chat[2].extra = {};
    assert.equal(boundId(chat[2]), null);
    assert.equal(boundId(chat[2], 0), 'B');
    const request = processRequest(chat, { chatFile: 'c' });
    assert.equal(request.firstIndex, undefined, 'the anchor is message 0');
    assert.equal(request.messages.length, 3);
    assert.equal(upToDate(chat), false);
});

test('a new swipe starts with a copy of the bound swipe\'s extra, which binds nothing', () => {
    // What SillyTavern does on a swipe that generates: the new swipe's extra is a copy.
    const message = reply('first', 'S0');
    message.swipes.push('second');
    message.swipe_id = 1;
    message.mes = 'second';
    message.swipe_info.push({ extra: structuredClone(message.extra) });
    assert.equal(boundId(message), null);
    assert.equal(boundId(message, 0), 'S0');
    assert.deepEqual(wireMessage(message).swipes_info, [{ st_var_system_snapshot_id: 'S0' }, {}]);
    assert.equal(upToDate([message]), false);
    applyResult([message], { bindings: [{ messageIndex: 0, swipeId: 1, snapshotId: 'S1' }] });
    assert.deepEqual([message.extra, message.swipe_info[1].extra], [bound('S1', 'second', 1), bound('S1', 'second', 1)]);
    assert.equal(boundId(message), 'S1');
});

test('a binding made from another text binds nothing: a streamed swipe, an edit', () => {
    // SillyTavern announces a streamed swipe while its text is `...`.
    const message = reply('...', null);
    applyResult([message], { bindings: [{ messageIndex: 0, swipeId: 0, snapshotId: 'EARLY' }] });
    assert.equal(boundId(message), 'EARLY');
    message.mes = 'The potion was poison! @.SET("hero.hp", 1);';
    message.swipes[0] = message.mes;
    assert.equal(boundId(message), null);
    assert.equal(holdsBinding(message), true, 'an edit of it still reprocesses');
    assert.equal(upToDate([message]), false);
    assert.deepEqual(wireMessage(message).swipes_info, [{}]);
    assert.notEqual(textDigest('a'), textDigest('b'));
    assert.equal(textDigest(''), '811c9dc5-0');
});

test('bindings are written into extra and swipe_info, dropped and cleared ones removed', () => {
    const chat = [reply('a', 'A'), user('u'), reply('b', 'OLD')];
    chat[2].swipes.push('b2');
    chat[2].swipe_info.push({ send_date: 'later', extra: bound('GONE', 'b2', 1) });
    const changed = applyResult(chat, {
        bindings: [{ messageIndex: 2, swipeId: 0, snapshotId: 'NEW' }],
        dropped: [{ messageIndex: 2, swipeId: 1, snapshotId: 'GONE' }],
        cleared: [{ messageIndex: 0, swipeId: 0, snapshotId: 'NOT-THERE' }],
    });
    assert.equal(changed, 2);
    assert.deepEqual(chat[2].extra, bound('NEW', 'b'));
    assert.deepEqual(chat[2].swipe_info, [
        { send_date: 'now', extra: bound('NEW', 'b') },
        { send_date: 'later', extra: {} },
    ]);
    assert.deepEqual(chat[0].extra, bound('A', 'a'), 'a cleared id it does not hold leaves it alone');
    assert.equal(upToDate(chat), true);
});

test('a binding for an inactive swipe does not touch the message extra', () => {
    const message = { is_user: false, mes: 'x', swipe_id: 1, swipes: ['w', 'x'], extra: { other: 1 } };
    applyResult([message], { bindings: [{ messageIndex: 0, swipeId: 0, snapshotId: 'S0' }] });
    assert.deepEqual(message.extra, { other: 1 });
    assert.deepEqual(message.swipe_info, [{ extra: bound('S0', 'w') }]);
});

test('a message without swipes is bound in extra only; a vanished message is skipped', () => {
    const greeting = { is_user: false, mes: 'hello' };
    const changed = applyResult([greeting], {
        bindings: [{ messageIndex: 0, swipeId: 0, snapshotId: 'G' }, { messageIndex: 5, swipeId: 0, snapshotId: 'X' }],
    });
    assert.equal(changed, 1);
    assert.deepEqual(greeting, { is_user: false, mes: 'hello', extra: bound('G', 'hello') });
});

test('the state text is the JSON of the state', () => {
    assert.equal(stateText({ hero: { hp: 5 } }), '{"hero":{"hp":5}}');
    assert.equal(stateText(undefined), '{}');
});

test('a tail whose anchor is not stored asks for the whole chat', () => {
    assert.equal(classifyToolError('SnapshotProcess: no message among those given from firstIndex 998 is bound to a stored snapshot; send the whole chat (firstIndex 0)'), 'whole');
    assert.equal(classifyToolError('SnapshotProcess: snapshot 9f, bound to message 7, was made for message 8: messages before it were deleted or inserted since; send the whole chat (firstIndex 0), or SnapshotReprocess from the first message that changed'), 'rewritten');
    assert.equal(classifyToolError('SnapshotProcess: `template` must be a JSON object'), 'report');
});

const approvalSchema = {
    type: 'object',
    properties: {
        approve: { type: 'boolean', title: 'Approve' },
        remember: { type: 'boolean', title: 'Remember', default: false },
        reason: { type: 'string', title: 'Reason' },
    },
    required: ['approve'],
};

test('an approval form is drawn from its schema and answered', () => {
    const fields = formFields(approvalSchema);
    assert.deepEqual(fields.map((field) => [field.name, field.type, field.required]), [
        ['approve', 'boolean', true],
        ['remember', 'boolean', false],
        ['reason', 'string', false],
    ]);
    assert.deepEqual(elicitationResult(fields, { remember: true, reason: '' }, true), {
        action: 'accept',
        content: { approve: true, remember: true },
    });
    assert.deepEqual(elicitationResult(fields, { remember: false, reason: 'no' }, false), { action: 'decline' });
    assert.deepEqual(elicitationResult(formFields({ properties: { count: { type: 'integer' }, mode: { type: 'string', enum: ['a', 'b'] } } }), { count: '3', mode: 'b' }, true), {
        action: 'accept',
        content: { count: 3, mode: 'b' },
    });
});

test('each kind of trouble is said once until a call works', () => {
    const notices = new Notices();
    assert.equal(notices.report('unreachable', 'down'), 'down');
    assert.equal(notices.report('unreachable', 'down'), null);
    assert.equal(notices.report('auth', 'token'), 'token');
    notices.reset();
    assert.equal(notices.report('unreachable', 'down'), 'down');
    assert.match(describeError({ kind: 'unreachable' }, 'http://127.0.0.1:1/mcp'), /not reachable at http:\/\/127\.0\.0\.1:1\/mcp\. The chat goes on/);
    assert.match(describeError({ kind: 'auth', status: 401 }, 'u'), /refused the token \(401\)/);
});

test('a server without the snapshot tools, or an older one, is of another version', () => {
    const process = { name: 'SnapshotProcess', inputSchema: { properties: { chatFile: {}, firstIndex: {} } } };
    const tools = [process, { name: 'SnapshotReprocess' }, { name: 'SnapshotGet' }];
    assert.equal(missingTools(tools), null);
    assert.match(missingTools([{ name: 'ReadVar' }]), /no SnapshotProcess, SnapshotReprocess, SnapshotGet/);
    assert.match(missingTools([{ name: 'SnapshotProcess', inputSchema: { properties: {} } }, tools[1], tools[2]]), /takes no firstIndex/);
});

test('a workspace with the snapshots group off is switched on through ToolGroups', () => {
    assert.equal(switchesOnGroup([{ name: 'ReadVar' }, { name: 'ToolGroups' }]), true);
    assert.equal(switchesOnGroup([{ name: 'ReadVar' }]), false, 'ToolGroups is off too: nothing to do');
    assert.equal(switchesOnGroup([{ name: 'SnapshotProcess' }, { name: 'ToolGroups' }]), false);
});

test('an earlier reply edited while the extension was off is found, and reprocessed from', () => {
    const chat = [reply('a', 'A'), user('u'), reply('b', 'B'), user('v'), reply('c', 'C'), user('w'), reply('new')];
    assert.equal(staleFrom(chat), -1);
    chat[2].mes = 'b, edited';
    chat[2].swipes[0] = chat[2].mes;
    assert.equal(staleFrom(chat), 2);
    assert.equal(staleFrom([reply('only', 'X')]), -1, 'the newest bound message is the anchor, not stale');
});
