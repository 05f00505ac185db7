// The Streamable HTTP client against a scripted server (a fake `fetch`): the session handshake,
// SSE answers with an approval asked in the middle, a session the server forgot, and errors.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { McpClient, McpError, SseParser } from '../lib/mcp-client.js';

function sse(...messages) {
    const text = messages.map((message) => `event: message\ndata: ${JSON.stringify(message)}\n\n`).join('');
    // Cut the stream mid-event to check that events are joined across reads.
    const bytes = new TextEncoder().encode(text);
    const middle = Math.floor(bytes.length / 2);
    const body = new ReadableStream({
        start(controller) {
            controller.enqueue(bytes.slice(0, middle));
            controller.enqueue(bytes.slice(middle));
            controller.close();
        },
    });
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
}

const json = (message, headers = {}) => new Response(JSON.stringify(message), { status: 200, headers: { 'content-type': 'application/json', ...headers } });

/** A fake server: `handle(body, headers)` answers each request; every request is recorded. */
function server(handle) {
    const requests = [];
    const fetch = async (url, init) => {
        const body = init.body ? JSON.parse(init.body) : null;
        requests.push({ url, method: init.method, headers: init.headers, body });
        return handle(body, init.headers, init.method);
    };
    return { fetch, requests };
}

function initialized(body, session = 'S1') {
    if (body.method === 'initialize') {
        return json({ jsonrpc: '2.0', id: body.id, result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'synapse-mcp', version: '0.1.0' } } }, { 'mcp-session-id': session });
    }
    if (body.method === 'notifications/initialized') {
        return new Response(null, { status: 202 });
    }
    return null;
}

test('SSE events are split on blank lines, across reads and line endings', () => {
    const parser = new SseParser();
    assert.deepEqual(parser.push('event: message\r\ndata: {"a"'), []);
    assert.deepEqual(parser.push(':1}\r\n\r\ndata: x\ndata: y\n\n: comment\n\n'), ['{"a":1}', 'x\ny']);
});

test('a tool call opens a session, answers an approval on the stream and returns the result', async () => {
    const asked = [];
    const { fetch, requests } = server((body, headers) => {
        const early = initialized(body);
        if (early) {
            return early;
        }
        if (body.method === 'tools/call') {
            assert.equal(headers['Mcp-Session-Id'], 'S1');
            assert.equal(headers.Authorization, 'Bearer syn_secret');
            return sse(
                { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } },
                { jsonrpc: '2.0', id: 0, method: 'elicitation/create', params: { message: 'Allow SnapshotReprocess?', requestedSchema: { type: 'object', properties: { approve: { type: 'boolean' } } } } },
                { jsonrpc: '2.0', id: body.id, result: { content: [{ type: 'text', text: '{}' }], structuredContent: { bindings: [], vs_stat_data: { hero: { hp: 5 } } } } },
            );
        }
        if (body.id === 0 && body.result) {
            return new Response(null, { status: 202 });
        }
        throw new Error(`unexpected ${JSON.stringify(body)}`);
    });
    const client = new McpClient({
        url: 'http://127.0.0.1:8765/mcp',
        token: 'syn_secret',
        fetch,
        onRequest: async (method, params) => {
            asked.push([method, params.message]);
            return { action: 'accept', content: { approve: true } };
        },
    });
    const result = await client.callTool('SnapshotReprocess', { chatFile: 'c' });
    assert.deepEqual(result, { bindings: [], vs_stat_data: { hero: { hp: 5 } } });
    assert.deepEqual(asked, [['elicitation/create', 'Allow SnapshotReprocess?']]);
    assert.deepEqual(requests.map((request) => request.body.method ?? `answer ${request.body.id}`), [
        'initialize', 'notifications/initialized', 'tools/call', 'answer 0',
    ]);
    assert.deepEqual(requests[0].body.params.capabilities, { elicitation: {} });
    assert.deepEqual(requests[3].body, { jsonrpc: '2.0', id: 0, result: { action: 'accept', content: { approve: true } } });
    assert.equal(requests[0].headers['Mcp-Session-Id'], undefined);
});

test('a session the server forgot (404) is opened again once', async () => {
    let sessions = 0;
    const { fetch, requests } = server((body, headers) => {
        if (body.method === 'initialize') {
            sessions++;
            return initialized(body, `S${sessions}`);
        }
        const early = initialized(body);
        if (early) {
            return early;
        }
        if (headers['Mcp-Session-Id'] === 'S1') {
            return new Response('no such session', { status: 404 });
        }
        return json({ jsonrpc: '2.0', id: body.id, result: { tools: [{ name: 'SnapshotProcess' }] } });
    });
    const client = new McpClient({ url: 'http://x/mcp', fetch });
    await client.connect();
    const tools = await client.listTools();
    assert.deepEqual(tools, [{ name: 'SnapshotProcess' }]);
    assert.equal(client.sessionId, 'S2');
    assert.equal(requests.filter((request) => request.body.method === 'initialize').length, 2);
});

test('errors say what went wrong: unreachable, token, tool error, JSON-RPC error, version', async () => {
    const down = new McpClient({ url: 'http://127.0.0.1:9/mcp', fetch: async () => { throw new TypeError('Failed to fetch'); } });
    await assert.rejects(down.connect(), (error) => error instanceof McpError && error.kind === 'unreachable' && /cannot reach http:\/\/127\.0\.0\.1:9\/mcp/.test(error.message));

    const refused = new McpClient({ url: 'u', fetch: async () => new Response('unknown token', { status: 401 }) });
    await assert.rejects(refused.connect(), (error) => error.kind === 'auth' && error.status === 401 && /unknown token/.test(error.message));

    const { fetch } = server((body) => initialized(body) || (body.method === 'tools/call'
        ? json({ jsonrpc: '2.0', id: body.id, result: { isError: true, content: [{ type: 'text', text: 'bad chat' }] } })
        : json({ jsonrpc: '2.0', id: body.id, error: { code: -32601, message: 'Method not found' } })));
    const client = new McpClient({ url: 'u', fetch });
    await assert.rejects(client.callTool('SnapshotProcess', {}), (error) => error.kind === 'tool' && error.message === 'SnapshotProcess: bad chat');
    await assert.rejects(client.request('nothing/here', {}), (error) => error.kind === 'rpc' && error.code === -32601);

    const old = new McpClient({ url: 'u', fetch: async (url, init) => json({ jsonrpc: '2.0', id: JSON.parse(init.body).id, result: { protocolVersion: '2024-11-05', serverInfo: {} } }) });
    await assert.rejects(old.connect(), (error) => error.kind === 'version' && /speaks MCP 2024-11-05/.test(error.message));
});

test('close ends the session with DELETE', async () => {
    const { fetch, requests } = server((body, headers, method) => (method === 'DELETE' ? new Response(null, { status: 200 }) : initialized(body)));
    const client = new McpClient({ url: 'u', fetch });
    await client.connect();
    await client.close();
    assert.equal(requests.at(-1).method, 'DELETE');
    assert.equal(requests.at(-1).headers['Mcp-Session-Id'], 'S1');
    assert.equal(client.sessionId, null);
});
