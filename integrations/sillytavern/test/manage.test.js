// The management screens' logic: the tool arguments they send and the checks of what is pasted.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
    editableFunction,
    fileName,
    floorLabel,
    libraryOf,
    moveArguments,
    ownIds,
    parseExport,
    parseFunction,
    parseMessages,
    parseState,
    previousFloor,
    reorderedIds,
    scopeArguments,
} from '../lib/manage.js';

const functions = [{ id: 'b', order: 2 }, { id: 'a', order: 1 }, { id: 'c', order: 3 }];

test('a library is listed in running order, global or the character\'s', () => {
    assert.deepEqual(libraryOf({ global: functions, local: [] }, 'global').map((item) => item.id), ['a', 'b', 'c']);
    assert.deepEqual(libraryOf({ global: functions, local: [{ id: 'x' }] }, 'character').map((item) => item.id), ['x']);
    assert.deepEqual(scopeArguments('character', 'Hero.png'), { characterId: 'Hero.png' });
    assert.deepEqual(scopeArguments('global', 'Hero.png'), {});
    assert.deepEqual(scopeArguments('character', undefined), {});
});

test('moving a function up or down sends the whole new order', () => {
    const sorted = libraryOf({ global: functions }, 'global');
    assert.deepEqual(reorderedIds(sorted, 'b', -1), ['b', 'a', 'c']);
    assert.deepEqual(reorderedIds(sorted, 'b', 1), ['a', 'c', 'b']);
    assert.equal(reorderedIds(sorted, 'a', -1), null);
    assert.equal(reorderedIds(sorted, 'c', 1), null);
    assert.equal(reorderedIds(sorted, 'nope', 1), null);
});

test('a function moves to the other library', () => {
    assert.deepEqual(moveArguments({ id: 'f' }, 'global', 'Hero.png'), { id: 'f', toCharacterId: 'Hero.png' });
    assert.deepEqual(moveArguments({ id: 'f' }, 'character', 'Hero.png'), { id: 'f', characterId: 'Hero.png' });
});

test('what is pasted is checked, with the fix named', () => {
    assert.deepEqual(parseFunction('{"id": "f", "name": "X", "builtin": "SET", "signature": "s", "example": "e", "characterId": "c"}'), { id: 'f', name: 'X' });
    assert.throws(() => parseFunction('{'), /the function is not JSON/);
    assert.throws(() => parseFunction('[1]'), /must be a JSON object/);
    assert.deepEqual(parseExport('{"version": "1.0", "functions": []}'), { version: '1.0', functions: [] });
    assert.throws(() => parseExport('{"functions": 3}'), /needs \{"version": "1.0", "functions": \[...\]\}/);
    assert.deepEqual(parseState('{"hero": {"hp": 5}}'), { hero: { hp: 5 } });
    assert.throws(() => parseState('"text"'), /must be a JSON object/);
    assert.throws(() => parseState('nope'), /not JSON/);
});

test('floors: labels, the floor before one, file names', () => {
    const floors = [
        { messageIndex: 0, snapshotId: 'g', summary: '' },
        { messageIndex: 2, swipeId: 0, snapshotId: 'a', summary: 'hero.hp = 5' },
        { messageIndex: 4, swipeId: 1, snapshotId: 'b', summary: 'hero.hp = 1' },
    ];
    assert.equal(floorLabel(floors[2]), '#4 swipe 1 · hero.hp = 1');
    assert.equal(floorLabel(floors[0]), '#0 · (no change)');
    assert.equal(previousFloor(floors, floors[2]).snapshotId, 'a');
    assert.equal(previousFloor(floors, floors[0]), null);
    assert.equal(fileName('Hero - 2026-11-27 @18h', 'floor', 4), 'Hero_-_2026-11-27_18h-floor-4.json');
});

test('a listed function is edited in the shape FunctionUpsert takes; an export names your own', () => {
    const listed = { id: 'f', name: 'HEAL', type: 'active', builtin: 'set', signature: 's', example: 'e', characterId: 'c', local: true, pattern: 'p' };
    assert.deepEqual(editableFunction(listed), { id: 'f', name: 'HEAL', type: 'active', pattern: 'p' });
    assert.deepEqual(ownIds([{ id: 'set', builtin: 'set' }, { id: 'f' }]), ['f']);
});

test('a chat is pasted as an array, as {messages}, or as a SillyTavern chat file', () => {
    const message = { is_user: false, mes: '@.SET("hp", 5);' };
    assert.deepEqual(parseMessages(JSON.stringify([message])), [message]);
    assert.deepEqual(parseMessages(JSON.stringify({ messages: [message] })), [message]);
    const file = [{ user_name: 'You', character_name: 'Hero', chat_metadata: {} }, { is_user: true, mes: 'hi' }, message]
        .map((line) => JSON.stringify(line)).join('\n');
    assert.deepEqual(parseMessages(`${file}\n`), [{ is_user: true, mes: 'hi' }, message]);
    assert.throws(() => parseMessages('  '), /paste the chat/);
    assert.throws(() => parseMessages('{"mes": 1}\nnot json'), /line 2 of the chat is not JSON/);
    assert.throws(() => parseMessages('{"chat": 1}'), /must be a JSON array/);
});
