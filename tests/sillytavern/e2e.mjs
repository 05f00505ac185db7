// The SillyTavern extension end to end: the real SillyTavern (SILLYTAVERN_DIR, 1.12.6) in
// headless Chromium, a canned OpenAI-compatible backend (backend.mjs) and a real
// `synapse-mcp serve --http`. A character whose description holds `STATE: {{vs_stat_data}}`,
// a first reply with `@.SET("hero.hp", 5);`: the next prompt must carry hp 5, the reply's
// `extra` the snapshot id SnapshotGet returns; the same streamed; a swipe rebinds and
// re-injects; a chat change injects that chat's state; `enabled` off stops every call; an edit
// of a bound reply reprocesses after an approval answered in SillyTavern's dialog; and no
// console error comes from the extension. Usage (tests/sillytavern/run.sh sets these up):
//   SILLYTAVERN_DIR=… SYNAPSE_MCP=target/debug/synapse-mcp [SYNAPSE_MCP_OTHER=an older build] \
//       node tests/sillytavern/e2e.mjs [--screenshots DIR]

import { spawn, execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBackend } from './backend.mjs';
import { McpClient } from '../../integrations/sillytavern/lib/mcp-client.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '../..');
const require = createRequire(join(REPO, 'tests/interop/package.json'));
const { chromium } = require('playwright-core');

const TAVERN = process.env.SILLYTAVERN_DIR;
const BINARY = resolve(process.env.SYNAPSE_MCP || join(REPO, 'target/debug/synapse-mcp'));
const shotsAt = process.argv.indexOf('--screenshots');
const SCREENSHOTS = shotsAt > 0 ? resolve(process.argv[shotsAt + 1]) : null;
const WAIT_MS = 60_000;

if (!TAVERN) {
    console.log('SILLYTAVERN_DIR is not set: the SillyTavern end-to-end test is skipped');
    process.exit(0);
}

/** The settings the test needs SillyTavern's config.yaml to have (docs/sillytavern.md). */
function checkConfig() {
    const text = readFileSync(join(TAVERN, 'config.yaml'), 'utf8');
    const wanted = [
        [/^listen: false$/m, 'listen: false'],
        [/^whitelistMode: true$/m, 'whitelistMode: true'],
        [/^enableExtensionsAutoUpdate: false$/m, 'enableExtensionsAutoUpdate: false'],
        [/^enableDownloadableTokenizers: false$/m, 'enableDownloadableTokenizers: false'],
        [/^\s+disableAutoDownload: true$/m, 'extras.disableAutoDownload: true'],
    ];
    const missing = wanted.filter(([pattern]) => !pattern.test(text)).map(([, line]) => line);
    if (missing.length > 0) {
        throw new Error(`${join(TAVERN, 'config.yaml')} must set ${missing.join(', ')} (docs/sillytavern.md)`);
    }
}

function freePort() {
    return new Promise((done) => {
        const server = createServer();
        server.listen(0, '127.0.0.1', () => {
            const { port } = server.address();
            server.close(() => done(port));
        });
    });
}

/** Spawns a process and resolves when a line of its output matches `ready`. */
function startProcess(command, args, options, ready) {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines = [];
    return new Promise((done, fail) => {
        const timer = setTimeout(() => fail(new Error(`${command} did not start:\n${lines.slice(-30).join('\n')}`)), WAIT_MS);
        const read = (chunk) => {
            for (const line of chunk.toString().split('\n')) {
                lines.push(line);
                const found = line.match(ready);
                if (found) {
                    clearTimeout(timer);
                    done({ child, found, lines });
                }
            }
        };
        child.stdout.on('data', read);
        child.stderr.on('data', read);
        child.on('exit', (code) => fail(new Error(`${command} exited with ${code}:\n${lines.slice(-30).join('\n')}`)));
    });
}

const results = [];
function check(name, condition, detail = '') {
    results.push({ name, ok: Boolean(condition), detail });
    console.log(`${condition ? 'ok  ' : 'FAIL'} ${name}${detail ? ` — ${detail}` : ''}`);
}

checkConfig();
const work = mkdtempSync(join(tmpdir(), 'synapse-st-'));
const children = [];
let browser;
let page;
const consoleErrors = [];
try {
    const backend = await startBackend();
    const tokens = join(work, 'tokens.toml');
    const home = join(work, 'home');
    mkdirSync(home);
    const token = execFileSync(BINARY, ['token', 'add', '--tokens', tokens, '--principal', 'tavern', '--workspace', 'rp', '--groups', 'snapshots'], { env: { ...process.env, HOME: home } }).toString().trim();
    const tavernPort = await freePort();
    const origin = `http://127.0.0.1:${tavernPort}`;
    const synapse = await startProcess(BINARY, ['serve', '--http', '127.0.0.1:0', '--tokens', tokens, '--store', 'memory', '--allowed-origin', origin, '--log-level', 'info'],
        { env: { ...process.env, HOME: home } }, /ready on (http:\/\/[^/\s]+)/);
    children.push(synapse.child);
    const mcpUrl = `${synapse.found[1]}/mcp`;
    const admin = new McpClient({ url: mcpUrl, token, fetch, onRequest: async () => ({ action: 'accept', content: { approve: true, remember: false } }) });
    await admin.callTool('ToolGroups', { action: 'disable', group: 'snapshots' });
    await admin.close();

    // SillyTavern with a data root of its own and the extension installed as a user copies it.
    const dataRoot = join(work, 'st-data');
    const extension = join(dataRoot, 'default-user', 'extensions', 'synapse');
    mkdirSync(dirname(extension), { recursive: true });
    cpSync(join(REPO, 'integrations/sillytavern'), extension, { recursive: true, filter: (path) => !path.includes(`${join('sillytavern', 'test')}`) });
    const tavern = await startProcess(process.execPath, ['server.js', '--port', String(tavernPort), '--dataRoot', dataRoot, '--listen', 'false', '--autorun', 'false'],
        { cwd: TAVERN }, /SillyTavern is listening|Go to:/);
    children.push(tavern.child);

    browser = await chromium.launch({
        executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
        headless: true,
        args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.on('console', (message) => {
        if (message.type() === 'error') consoleErrors.push(message.text());
        if (process.env.E2E_DEBUG && message.text().startsWith('[synapse]')) console.log('page:', message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(`pageerror: ${error.message}`));
    page.on('response', (response) => {
        if (response.status() >= 500) consoleErrors.push(`(${response.status()} from ${response.url()})`);
    });
    const synapseCalls = [];
    page.on('request', (request) => {
        if (request.url().startsWith(mcpUrl)) {
            synapseCalls.push(`${request.method()} ${request.url()}`);
            const body = request.postData() || '';
            if (process.env.E2E_DEBUG && body.includes('tools/call')) console.log('call:', body.slice(0, 1500));
        }
    });

    const open = async () => {
        await page.goto(`${origin}/`);
        await page.waitForFunction(() => globalThis.synapseExtension && document.querySelector('#synapse_enabled'), null, { timeout: WAIT_MS });
        await page.waitForFunction(() => !document.querySelector('#preloader'), null, { timeout: WAIT_MS }).catch(() => {});
        await page.waitForTimeout(1000);
        // A first start greets with a dialog (the user's name): accept what it offers.
        for (let round = 0; round < 5 && await page.locator('dialog.popup[open]').count() > 0; round++) {
            if (process.env.E2E_DEBUG) console.log('dialog:', await page.locator('dialog.popup[open]').first().innerText());
            await page.locator('dialog.popup[open] .popup-button-ok').first().click();
            await page.waitForTimeout(500);
        }
    };
    await open();

    // Two characters, made the way the character panel makes them.
    for (const character of [
        { ch_name: 'Hero', description: 'A brave hero.\nSTATE: {{vs_stat_data}}', first_mes: 'Welcome, hero. A goblin blocks the road.' },
        { ch_name: 'Sage', description: 'A calm sage.\nSTATE: {{vs_stat_data}}', first_mes: 'The sage nods. @.SET("sage.mood", "calm");' },
    ]) {
        const status = await page.evaluate(async (fields) => {
            const headers = SillyTavern.getContext().getRequestHeaders();
            delete headers['Content-Type'];
            const body = new URLSearchParams({ ...fields, personality: '', scenario: '', mes_example: '', creator_notes: '', system_prompt: '', post_history_instructions: '', tags: '', creator: '', character_version: '', talkativeness: '0.5', fav: 'false', world: '', depth_prompt_prompt: '', depth_prompt_depth: '4', depth_prompt_role: 'system', alternate_greetings: '', extensions: '{}' });
            const response = await fetch('/api/characters/create', { method: 'POST', headers: { ...headers, 'Content-Type': 'application/x-www-form-urlencoded' }, body });
            return response.status;
        }, character);
        check(`character ${character.ch_name} created`, status === 200, `status ${status}`);
    }
    await open();

    // The backend: chat completion, custom OpenAI-compatible source at the canned server.
    await page.evaluate(async ([url]) => {
        $('#main_api').val('openai').trigger('change');
        $('#chat_completion_source').val('custom').trigger('change');
        $('#custom_api_url_text').val(url).trigger('input');
        $('#custom_model_id').val('canned-model').trigger('input');
        $('#stream_toggle').prop('checked', false).trigger('change');
        $('#api_button_openai').trigger('click');
    }, [backend.url]);
    await page.waitForFunction(() => SillyTavern.getContext().onlineStatus !== 'no_connection', null, { timeout: WAIT_MS }).catch(() => {});

    // The extension's panel: URL, token, check, enable.
    // The enable switch, clicked as a user clicks it.
    const setEnabled = async (on) => {
        await openPanel();
        await page.evaluate((wanted) => {
            const box = document.getElementById('synapse_enabled');
            if (box.checked !== wanted) box.click();
        }, on);
    };
    // As a user opens it: the Extensions drawer, then the extension's own drawer.
    const openPanel = async () => {
        if (!(await page.locator('#synapse_url').isVisible())) {
            if (!(await page.locator('.synapse-settings').isVisible())) {
                await page.click('#extensions-settings-button .drawer-toggle');
                await page.locator('.synapse-settings').waitFor({ state: 'visible', timeout: WAIT_MS });
            }
            if (!(await page.locator('#synapse_url').isVisible())) {
                await page.click('.synapse-settings .inline-drawer-toggle');
                await page.locator('#synapse_url').waitFor({ state: 'visible', timeout: WAIT_MS });
            }
        }
    };
    await openPanel();
    await page.fill('#synapse_url', mcpUrl);
    await page.fill('#synapse_token', token);
    await page.evaluate(() => {
        for (const id of ['synapse_url', 'synapse_token']) document.getElementById(id).dispatchEvent(new Event('change'));
        document.getElementById('synapse_check').click();
    });
    // The workspace starts with the snapshots group switched off: the check switches it on
    // through ToolGroups, and the server asks the user in SillyTavern's dialog.
    const approvals = page.locator('dialog.popup .synapse-approval');
    await approvals.waitFor({ timeout: WAIT_MS });
    const asked = await approvals.innerText();
    await page.click('dialog.popup .popup-button-ok');
    await page.waitForFunction(() => /connected:/.test(document.querySelector('#synapse_status').textContent), null, { timeout: WAIT_MS });
    check('a workspace with the snapshots group off is switched on after the user approves it', /ToolGroups/.test(asked), asked.split('\n').slice(0, 2).join(' '));
    check('connection check', true, await page.textContent('#synapse_status'));
    await setEnabled(true);

    const idle = () => page.evaluate(() => globalThis.synapseExtension.idle());
    const ctx = (body) => page.evaluate(body);
    const selectCharacter = async (name) => {
        await page.evaluate(async (wanted) => {
            const context = SillyTavern.getContext();
            const index = context.characters.findIndex((character) => character.name === wanted);
            await context.selectCharacterById(String(index));
        }, name);
        await page.waitForFunction((wanted) => SillyTavern.getContext().name2 === wanted && SillyTavern.getContext().chat.length > 0, name, { timeout: WAIT_MS });
        await page.waitForTimeout(300);
        await idle();
    };
    const send = async (text) => {
        const before = await ctx(() => SillyTavern.getContext().chat.length);
        await page.fill('#send_textarea', text);
        await page.click('#send_but');
        await page.waitForFunction((count) => {
            const { chat } = SillyTavern.getContext();
            return chat.length >= count + 2 && !chat[chat.length - 1].is_user && document.querySelector('#send_but') && getComputedStyle(document.querySelector('#send_but')).display !== 'none';
        }, before, { timeout: WAIT_MS });
        await page.waitForTimeout(300);
        await idle();
    };
    const lastMessage = () => ctx(() => {
        const { chat } = SillyTavern.getContext();
        const message = chat[chat.length - 1];
        return { mes: message.mes, swipe_id: message.swipe_id, extra: message.extra, swipe_info: (message.swipe_info || []).map((info) => info?.extra?.synapse_snapshot ?? null) };
    });
    const macro = () => ctx(() => SillyTavern.getContext().substituteParams('{{vs_stat_data}}'));
    const variable = () => ctx(() => SillyTavern.getContext().chatMetadata.variables?.vs_stat_data);
    const server = new McpClient({ url: mcpUrl, token, fetch });
    const snapshotGet = (id) => server.callTool('SnapshotGet', { id });
    const lastPrompt = () => JSON.stringify(backend.requests.at(-1)?.messages ?? []);

    // 1. A first reply (not streamed) with a call.
    await selectCharacter('Hero');
    backend.replies.push('You strike the goblin, but it bites back. @.SET("hero.hp", 5);');
    await send('I attack the goblin.');
    const first = await lastMessage();
    const firstId = first.extra?.synapse_snapshot;
    check('the first reply\'s extra holds a snapshot id, in swipe_info too', typeof firstId === 'string' && first.swipe_info[first.swipe_id] === firstId, JSON.stringify(first));
    const stored = await snapshotGet(firstId);
    check('SnapshotGet returns the bound snapshot with hp 5', JSON.stringify(stored.snapshot) === '{"hero":{"hp":5}}' && stored.messageId === 2, JSON.stringify(stored));
    check('the chat variable and the macro hold the state', (await variable()) === '{"hero":{"hp":5}}' && (await macro()) === '{"hero":{"hp":5}}');
    const saved = await ctx(async () => {
        const context = SillyTavern.getContext();
        await context.saveChat();
        return context.chat[2].extra.synapse_snapshot;
    });
    check('the binding is in the saved chat', saved === firstId);

    // 2. The next prompt carries the state where the placeholder stood; this reply is streamed.
    await page.evaluate(() => $('#stream_toggle').prop('checked', true).trigger('change'));
    backend.replies.push('You drink a potion. @.ADD("hero.hp", 3); @.SET("hero.gold", 10);');
    await send('I drink a potion.');
    check('the next prompt carries STATE with hp 5', lastPrompt().includes('STATE: {\\"hero\\":{\\"hp\\":5}}'), lastPrompt().slice(0, 400));
    check('the streamed request was streamed', backend.requests.at(-1).stream === true);
    const second = await lastMessage();
    const secondStored = await snapshotGet(second.extra?.synapse_snapshot);
    check('a streamed reply is bound and processed', JSON.stringify(secondStored.snapshot) === '{"hero":{"hp":8,"gold":10}}' && second.swipe_info[0] === second.extra.synapse_snapshot, JSON.stringify(second));
    const processCalls = synapseCalls.length;

    // 3. A swipe: a new swipe is generated (streamed), bound, injected; back to swipe 0 rebinds.
    backend.replies.push('The potion was poison! @.SET("hero.hp", 1);');
    await page.click('#chat .mes.last_mes .swipe_right');
    await page.waitForFunction(() => {
        const { chat } = SillyTavern.getContext();
        const message = chat[chat.length - 1];
        return message.swipe_id === 1 && message.swipes.length === 2 && /poison/.test(message.mes);
    }, null, { timeout: WAIT_MS });
    await page.waitForTimeout(500);
    await idle();
    const swiped = await lastMessage();
    const swipedStored = swiped.extra?.synapse_snapshot ? await snapshotGet(swiped.extra.synapse_snapshot) : {};
    check('a new swipe is bound to its own snapshot', swiped.swipe_info[1] === swiped.extra?.synapse_snapshot && swiped.swipe_info[0] === second.extra.synapse_snapshot && JSON.stringify(swipedStored.snapshot) === '{"hero":{"hp":1}}', JSON.stringify(swiped));
    check('the new swipe\'s state is injected', (await macro()) === '{"hero":{"hp":1}}', await macro());
    await page.click('#chat .mes.last_mes .swipe_left');
    await page.waitForFunction(() => SillyTavern.getContext().chat.at(-1).swipe_id === 0, null, { timeout: WAIT_MS });
    await page.waitForTimeout(500);
    await idle();
    const back = await lastMessage();
    check('swiping back rebinds swipe 0 and re-injects its state', back.extra?.synapse_snapshot === second.extra.synapse_snapshot && (await macro()) === '{"hero":{"hp":8,"gold":10}}', `${JSON.stringify(back)} ${await macro()}`);
    check('a reply and a swipe each cost one or two small calls, no reprocessing', synapseCalls.length - processCalls <= 6, `${synapseCalls.length - processCalls} requests`);

    if (SCREENSHOTS) {
        mkdirSync(SCREENSHOTS, { recursive: true });
        await openPanel();
        await page.evaluate(() => {
            const details = document.querySelector('.synapse-state');
            details.open = true;
            details.dispatchEvent(new Event('toggle'));
        });
        await page.waitForTimeout(300);
        await page.locator('.synapse-settings').screenshot({ path: join(SCREENSHOTS, 'sillytavern-settings.png') });
    }

    // 4. A chat change injects that chat's state; changing back restores the first.
    await selectCharacter('Sage');
    check('another chat injects its own state', (await macro()) === '{"sage":{"mood":"calm"}}', await macro());
    await selectCharacter('Hero');
    check('changing back injects the first chat\'s latest state', (await macro()) === '{"hero":{"hp":8,"gold":10}}', await macro());

    // 5. An edit of a bound reply reprocesses from it, after an approval in SillyTavern's dialog.
    await page.evaluate(async () => {
        const context = SillyTavern.getContext();
        const index = context.chat.length - 3;
        const message = context.chat[index];
        message.mes = message.mes.replace('"hero.hp", 5', '"hero.hp", 6');
        if (Array.isArray(message.swipes)) message.swipes[message.swipe_id ?? 0] = message.mes;
        context.eventSource.emit(context.eventTypes.MESSAGE_EDITED, index);
    });
    const dialog = page.locator('dialog.popup .synapse-approval');
    await dialog.waitFor({ timeout: WAIT_MS });
    if (SCREENSHOTS) {
        await page.locator('dialog.popup').screenshot({ path: join(SCREENSHOTS, 'sillytavern-approval.png') });
    }
    await page.locator('dialog.popup .synapse-approval input[name="remember"]').check().catch(() => {});
    await page.click('dialog.popup .popup-button-ok');
    await dialog.waitFor({ state: 'detached', timeout: WAIT_MS });
    await page.waitForTimeout(300);
    await idle();
    check('an edited reply is reprocessed after the approval', (await macro()) === '{"hero":{"hp":9,"gold":10}}', await macro());

    // 6. Messages deleted in the middle: the later floors moved, so the chat is reprocessed and
    // its state is what processing the chat as it is now from scratch gives.
    await page.evaluate(async () => {
        const context = SillyTavern.getContext();
        context.chat.splice(1, 2);
        await context.saveChat();
        await context.reloadCurrentChat();
    });
    await page.waitForTimeout(500);
    for (let round = 0; round < 3 && await approvals.count() > 0; round++) {
        await page.click('dialog.popup .popup-button-ok');
        await page.waitForTimeout(300);
    }
    await idle();
    const remaining = await ctx(() => SillyTavern.getContext().chat.map((message) => ({ is_user: Boolean(message.is_user), is_system: Boolean(message.is_system), mes: message.mes })));
    const fresh = await server.callTool('SnapshotProcess', { chatFile: 'from-scratch', messages: remaining });
    check('a message deleted in the middle reprocesses the chat as it is now', (await macro()) === JSON.stringify(fresh.vs_stat_data), `${await macro()} against ${JSON.stringify(fresh.vs_stat_data)}`);

    // 7. The management screens, from the panel: every operation, checked on the server.
    const approvalDialog = 'dialog.popup:has(.synapse-approval)';
    const settle = async (what, condition) => {
        const deadline = Date.now() + WAIT_MS;
        while (Date.now() < deadline) {
            if (await page.locator(approvalDialog).count() > 0) {
                await page.locator(`${approvalDialog} .popup-button-ok`).first().click();
                await page.waitForTimeout(200);
                continue;
            }
            if (await condition()) return true;
            await page.waitForTimeout(200);
        }
        throw new Error(`timed out waiting for ${what}`);
    };
    const screen = (name) => page.locator(`[data-screen="${name}"]`);
    const act = (name, action, within = '') => page.locator(`[data-screen="${name}"] ${within} [data-action="${action}"]`).first().click();
    const library = async (characterId) => {
        const listed = await server.callTool('FunctionList', characterId ? { characterId } : {});
        return characterId ? listed.local : listed.global;
    };
    const closeScreen = async (name) => {
        await page.locator(`dialog.popup:has([data-screen="${name}"]) .popup-button-ok`).click();
        await screen(name).waitFor({ state: 'detached', timeout: WAIT_MS });
    };
    const scratch = join(work, 'files');
    mkdirSync(scratch);

    await openPanel();
    await page.click('#synapse_functions');
    await screen('functions').locator('[data-name="SET"]').waitFor({ timeout: WAIT_MS });
    check('the function library lists the built-ins', true);
    await act('functions', 'new');
    await act('functions', 'save');
    await settle('DOUBLE saved', async () => (await library()).some((item) => item.name === 'DOUBLE'));
    await screen('functions').locator('[data-name="DOUBLE"]').waitFor({ timeout: WAIT_MS });
    check('a function is added from the editor', true);
    await act('functions', 'test');
    await settle('the test result', async () => (await screen('functions').locator('[data-field="test-result"]').textContent()).includes('"snapshot"'));
    const tested = JSON.parse(await screen('functions').locator('[data-field="test-result"]').textContent());
    check('a text is tested against the library', JSON.stringify(tested.snapshot) === '{"hero":{"hp":10}}', JSON.stringify(tested.snapshot));
    const edited = JSON.parse(await screen('functions').locator('[data-field="function"]').inputValue());
    edited.pattern = '@\\.TRIPLE\\("([^"]+)"\\);';
    edited.executor = 'const path = args[0];\n_.set(snapshot, path, (_.get(snapshot, path) || 0) * 3);\nreturn snapshot;';
    await screen('functions').locator('[data-field="function"]').fill(JSON.stringify(edited));
    await screen('functions').locator('[data-field="test-text"]').fill('@.SET("hero.hp", 5); @.TRIPLE("hero.hp");');
    await screen('functions').locator('[data-field="test-unsaved"]').check();
    await act('functions', 'test');
    await settle('the unsaved test', async () => (await screen('functions').locator('[data-field="test-result"]').textContent()).includes('"hp": 15'));
    check('an unsaved pattern is tested, nothing stored', (await library()).find((item) => item.name === 'DOUBLE').pattern.includes('DOUBLE'));
    await screen('functions').locator('[data-name="DOUBLE"] [data-field="enabled"]').uncheck();
    await settle('DOUBLE disabled', async () => (await library()).find((item) => item.name === 'DOUBLE').enabled === false);
    check('a function is switched off', true);
    const running = async () => (await library()).sort((a, b) => a.order - b.order).map((item) => item.name);
    const orderBefore = await running();
    const step = orderBefore.indexOf('DOUBLE') === 0 ? 1 : -1;
    await act('functions', step > 0 ? 'down' : 'up', '[data-name="DOUBLE"]');
    await settle('DOUBLE moved', async () => (await running()).indexOf('DOUBLE') === orderBefore.indexOf('DOUBLE') + step);
    check('a function is moved in the running order', true, `${step > 0 ? 'down' : 'up'} to ${orderBefore.indexOf('DOUBLE') + step}`);
    const [download] = await Promise.all([page.waitForEvent('download'), act('functions', 'export')]);
    const exportedPath = join(scratch, 'functions.json');
    await download.saveAs(exportedPath);
    const exported = JSON.parse(readFileSync(exportedPath, 'utf8'));
    check('the library is exported', exported.version === '1.0' && exported.functions.some((item) => item.name === 'DOUBLE'), `${exported.functions.length} functions`);
    await act('functions', 'move', '[data-name="DOUBLE"]');
    await settle('DOUBLE in Hero.png', async () => (await library('Hero.png')).some((item) => item.name === 'DOUBLE'));
    check('a function is moved to the character\'s library', !(await library()).some((item) => item.name === 'DOUBLE'));
    await screen('functions').locator('[data-field="scope"]').selectOption('character');
    await screen('functions').locator('[data-name="DOUBLE"]').waitFor({ timeout: WAIT_MS });
    await act('functions', 'delete', '[data-name="DOUBLE"]');
    await settle('DOUBLE deleted', async () => !(await library('Hero.png')).some((item) => item.name === 'DOUBLE'));
    check('a function is deleted (after the approval)', true);
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), act('functions', 'import')]);
    await chooser.setFiles(exportedPath);
    await settle('the import', async () => (await library('Hero.png')).some((item) => item.name === 'DOUBLE'));
    check('an export is imported (switched off)', (await library('Hero.png')).find((item) => item.name === 'DOUBLE').enabled === false);
    await closeScreen('functions');

    await page.click('#synapse_floors');
    await screen('floors').locator('.synapse-floor').first().waitFor({ timeout: WAIT_MS });
    const floorIds = await screen('floors').locator('.synapse-floor').evaluateAll((rows) => rows.map((row) => row.dataset.snapshot));
    const listedFloors = (await server.callTool('SnapshotList', { chatFile: await ctx(() => SillyTavern.getContext().getCurrentChatId()) })).floors;
    check('the floors are listed', JSON.stringify(floorIds) === JSON.stringify(listedFloors.map((floor) => floor.snapshotId)), `${floorIds.length} floors`);
    const lastFloor = listedFloors.at(-1);
    await screen('floors').locator(`[data-snapshot="${lastFloor.snapshotId}"]`).click();
    await settle('the floor view', async () => (await screen('floors').locator('[data-field="state"]').inputValue()).includes('hero'));
    const viewed = JSON.parse(await screen('floors').locator('[data-field="state"]').inputValue());
    check('a floor is viewed', JSON.stringify(viewed) === JSON.stringify((await snapshotGet(lastFloor.snapshotId)).snapshot), JSON.stringify(viewed));
    await act('floors', 'diff');
    await settle('the diff', async () => (await screen('floors').locator('[data-field="diff"]').textContent()).includes('"patch"'));
    check('a floor is diffed with the one before', JSON.parse(await screen('floors').locator('[data-field="diff"]').textContent()).patch.length > 0);
    await screen('floors').locator('[data-field="label"]').fill('after the potion');
    await act('floors', 'save-global');
    await settle('the global snapshot', async () => (await server.callTool('SnapshotGlobalList', {})).globals.some((item) => item.label === 'after the potion'));
    check('a floor is saved as a global snapshot', true);
    await screen('floors').locator('[data-field="state"]').fill('{"hero": {"hp": 50, "gold": 10}}');
    await act('floors', 'save-edit');
    await settle('the edit', async () => (await snapshotGet(lastFloor.snapshotId)).snapshot.hero.hp === 50);
    check('a floor is edited (after the approval)', true);
    const [floorDownload] = await Promise.all([page.waitForEvent('download'), act('floors', 'export')]);
    const floorPath = join(scratch, 'floor.json');
    await floorDownload.saveAs(floorPath);
    check('a floor is exported as JSON', readFileSync(floorPath, 'utf8').includes('"hp": 50'));
    const mvuPath = join(scratch, 'mvu.json');
    writeFileSync(mvuPath, JSON.stringify({ hero: { hp: 7, $meta: { extensible: true } }, $meta: { strictTemplate: false } }));
    const [floorChooser] = await Promise.all([page.waitForEvent('filechooser'), act('floors', 'import')]);
    await floorChooser.setFiles(mvuPath);
    await settle('the import', async () => (await snapshotGet(lastFloor.snapshotId)).snapshot.hero.hp === 7);
    check('floor JSON is imported with MVU metadata stripped', JSON.stringify((await snapshotGet(lastFloor.snapshotId)).snapshot) === '{"hero":{"hp":7}}', JSON.stringify((await snapshotGet(lastFloor.snapshotId)).snapshot));
    await act('floors', 'reprocess');
    await settle('the reprocessing', async () => (await macro()) === JSON.stringify(fresh.vs_stat_data)
        && /floor\(s\)/.test(await screen('floors').locator('.synapse-screen-status').textContent()));
    check('reprocessing from a floor rebuilds it from the chat', true);
    await screen('floors').locator('[data-field="chat-switch"]').selectOption('off');
    await settle('the chat switch', async () => /this chat: off/.test(await screen('floors').locator('.synapse-screen-status').textContent()));
    const switched = await server.callTool('SnapshotProcess', { chatFile: await ctx(() => SillyTavern.getContext().getCurrentChatId()), messages: [] });
    check('processing is switched off for the chat from the screen', switched.disabled?.by === 'chat', JSON.stringify(switched.disabled));
    await screen('floors').locator('[data-field="chat-switch"]').selectOption('inherit');
    await settle('the chat switch back', async () => /this chat: inherit/.test(await screen('floors').locator('.synapse-screen-status').textContent()));
    if (SCREENSHOTS) {
        await page.locator('dialog.popup:has([data-screen="floors"])').screenshot({ path: join(SCREENSHOTS, 'sillytavern-floors.png') });
    }
    await closeScreen('floors');
    if (SCREENSHOTS) {
        await page.click('#synapse_functions');
        await screen('functions').locator('[data-name="SET"]').waitFor({ timeout: WAIT_MS });
        await page.locator('dialog.popup:has([data-screen="functions"])').screenshot({ path: join(SCREENSHOTS, 'sillytavern-functions.png') });
        await closeScreen('functions');
    }

    // 8. Enabled off: no call at all, and the chat goes on.
    await setEnabled(false);
    const callsBefore = synapseCalls.length;
    backend.replies.push('Quiet now. @.SET("hero.hp", 2);');
    await send('I rest.');
    await selectCharacter('Sage');
    await selectCharacter('Hero');
    check('with enabled off no call reaches the server', synapseCalls.length === callsBefore, `${synapseCalls.length - callsBefore} calls`);
    check('with enabled off the reply is left unbound', !(await lastMessage()).extra?.synapse_snapshot);

    // 9. The server down: said once, the chat goes on.
    // An earlier reply edited while the extension was off: switching it on reprocesses from it.
    await page.evaluate(() => {
        const context = SillyTavern.getContext();
        const index = context.chat.findIndex((message) => !message.is_user && /hero\.gold/.test(message.mes));
        const message = context.chat[index];
        message.mes = message.mes.replace('"hero.gold", 10', '"hero.gold", 20');
        if (Array.isArray(message.swipes)) message.swipes[message.swipe_id ?? 0] = message.mes;
    });
    await setEnabled(true);
    const editedOff = await ctx(() => SillyTavern.getContext().chat.map((message) => ({ is_user: Boolean(message.is_user), is_system: Boolean(message.is_system), mes: message.mes })));
    const expected = await server.callTool('SnapshotProcess', { chatFile: 'from-scratch-2', messages: editedOff });
    await settle('the stale floors reprocessed', async () => (await macro()) === JSON.stringify(expected.vs_stat_data));
    await idle();
    check('a reply edited while the extension was off is reprocessed when it is switched on', true, await macro());
    synapse.child.kill('SIGTERM');
    await new Promise((done) => synapse.child.once('exit', done));
    backend.replies.push('Still here.');
    await send('Hello?');
    backend.replies.push('Yes.');
    await send('Anyone?');
    const toasts = await page.locator('#toast-container .toast-warning').count();
    check('a server that is down is said once and the chat goes on', toasts === 1 && (await lastMessage()).mes === 'Yes.', `${toasts} warnings`);

    // The settings are SillyTavern's: they survive a reload.
    await page.waitForTimeout(1500); // saveSettingsDebounced
    await open();
    await openPanel();
    const kept = { enabled: await page.isChecked('#synapse_enabled'), url: await page.inputValue('#synapse_url'), token: await page.inputValue('#synapse_token') };
    check('the settings are kept in SillyTavern\'s settings across a reload', kept.enabled && kept.url === mcpUrl && kept.token === token, JSON.stringify({ ...kept, token: kept.token ? 'syn_…' : '' }));

    // An older synapse-mcp (SYNAPSE_MCP_OTHER): it allows no page's origin (no CORS), so the
    // browser cannot read it: said once, and the chat goes on.
    if (process.env.SYNAPSE_MCP_OTHER) {
        const other = await startProcess(resolve(process.env.SYNAPSE_MCP_OTHER), ['serve', '--http', '127.0.0.1:0', '--tokens', tokens, '--store', 'memory', '--allowed-origin', origin],
            { env: { ...process.env, HOME: home } }, /ready on (http:\/\/[^/\s]+)/);
        children.push(other.child);
        await openPanel();
        await page.fill('#synapse_url', `${other.found[1]}/mcp`);
        await page.evaluate(() => document.getElementById('synapse_url').dispatchEvent(new Event('change')));
        await page.evaluate(() => document.querySelectorAll('#toast-container .toast').forEach((toast) => toast.remove()));
        await selectCharacter('Hero');
        // After the reload the backend connects again as a user does, with the API button.
        await page.evaluate(() => $('#api_button_openai').trigger('click'));
        await page.waitForFunction(() => SillyTavern.getContext().onlineStatus !== 'no_connection', null, { timeout: WAIT_MS });
        backend.replies.push('Other server.');
        await send('And now?');
        backend.replies.push('Still fine.');
        await send('Still there?');
        const warnings = await page.locator('#toast-container .toast-warning').allTextContents();
        check('an older synapse-mcp is said once and the chat goes on', warnings.length === 1 && /allows this page/.test(warnings[0]) && (await lastMessage()).mes === 'Still fine.', `${warnings.join(' | ')} / ${await page.textContent('#synapse_status')} / ${(await lastMessage()).mes}`);
        await openPanel();
        await page.fill('#synapse_url', mcpUrl);
        await page.evaluate(() => document.getElementById('synapse_url').dispatchEvent(new Event('change')));
    }


    const fromExtension = consoleErrors.filter((text) => /synapse|third-party/i.test(text));
    check('no console error from the extension', fromExtension.length === 0, fromExtension.join(' | '));
    if (consoleErrors.length > 0) {
        console.log(`(console errors not from the extension: ${consoleErrors.length})\n  ${consoleErrors.slice(0, 10).join('\n  ')}`);
    }
} catch (error) {
    check('the run finished', false, error.stack || String(error));
    const status = await page?.textContent('#synapse_status').catch(() => null);
    const screens = await page?.locator('.synapse-screen-status').allTextContents().catch(() => []);
    console.log(`screen status: ${JSON.stringify(screens)}`);
    if (process.env.E2E_DEBUG) await page?.screenshot({ path: '/tmp/e2e-failure.png' }).catch(() => {});
    console.log(`extension status: ${status}\nconsole errors:\n  ${consoleErrors.join('\n  ')}`);
} finally {
    await browser?.close().catch(() => {});
    for (const child of children) child.kill('SIGTERM');
    rmSync(work, { recursive: true, force: true });
}
const failed = results.filter((result) => !result.ok);
console.log(`${results.length - failed.length} of ${results.length} checks passed`);
process.exit(failed.length > 0 ? 1 : 0);
