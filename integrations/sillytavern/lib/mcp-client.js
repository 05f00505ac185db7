// A small MCP client over Streamable HTTP (protocol 2025-06-18), written for the browser and
// Node alike: it takes `fetch` as a parameter, so the tests drive it without a server. It opens a
// session (`initialize`, then `notifications/initialized`), keeps its `Mcp-Session-Id`, reads a
// response given as JSON or as an SSE stream, answers the requests the server sends on that
// stream (`elicitation/create`: an approval) through `onRequest`, and opens a new session once
// when the server says the old one is gone (404).

export const PROTOCOL_VERSION = '2025-06-18';
const SUPPORTED_VERSIONS = ['2025-06-18', '2025-03-26'];

/** Why a call failed; `kind` is what the extension tells the user. */
export class McpError extends Error {
    /**
     * @param {string} message
     * @param {{kind: 'unreachable'|'auth'|'http'|'protocol'|'version'|'rpc'|'tool', status?: number, code?: number}} details
     */
    constructor(message, details) {
        super(message);
        this.name = 'McpError';
        this.kind = details.kind;
        this.status = details.status;
        this.code = details.code;
    }
}

/** Splits an SSE byte stream's text into the `data` of each event. */
export class SseParser {
    constructor() {
        this.buffer = '';
    }

    /** @param {string} text @returns {string[]} the data of every event completed by `text` */
    push(text) {
        this.buffer += text.replace(/\r\n?/g, '\n');
        const events = [];
        let end;
        while ((end = this.buffer.indexOf('\n\n')) >= 0) {
            const block = this.buffer.slice(0, end);
            this.buffer = this.buffer.slice(end + 2);
            const data = block
                .split('\n')
                .filter((line) => line.startsWith('data:'))
                .map((line) => line.slice(5).replace(/^ /, ''));
            if (data.length > 0) {
                events.push(data.join('\n'));
            }
        }
        return events;
    }
}

export class McpClient {
    /**
     * @param {object} options
     * @param {string} options.url the server's `/mcp` endpoint
     * @param {string} [options.token] sent as `Authorization: Bearer …`
     * @param {typeof fetch} options.fetch
     * @param {(method: string, params: any) => Promise<any>} [options.onRequest] answers a
     *   request of the server's (its result); throwing answers with an error
     * @param {{name: string, version: string}} [options.clientInfo]
     */
    constructor(options) {
        this.url = options.url;
        this.token = options.token || '';
        this.fetch = options.fetch;
        this.onRequest = options.onRequest || (async (method) => {
            throw new Error(`unsupported request ${method}`);
        });
        this.clientInfo = options.clientInfo || { name: 'synapse-sillytavern', version: '0.1.0' };
        this.sessionId = null;
        this.serverInfo = null;
        this.protocolVersion = null;
        this.nextId = 1;
    }

    headers(extra = {}) {
        const headers = {
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream',
            ...extra,
        };
        if (this.token) {
            headers.Authorization = `Bearer ${this.token}`;
        }
        if (this.sessionId) {
            headers['Mcp-Session-Id'] = this.sessionId;
            headers['MCP-Protocol-Version'] = this.protocolVersion || PROTOCOL_VERSION;
        }
        return headers;
    }

    async post(body, signal) {
        try {
            return await this.fetch(this.url, {
                method: 'POST',
                headers: this.headers(),
                body: JSON.stringify(body),
                signal,
            });
        } catch (error) {
            if (error && error.name === 'AbortError') {
                throw error;
            }
            throw new McpError(`cannot reach ${this.url}: ${error && error.message ? error.message : error}`, { kind: 'unreachable' });
        }
    }

    /** Opens a session; answers the server's `initialize` result. */
    async connect(signal) {
        this.sessionId = null;
        const result = await this.exchange('initialize', {
            protocolVersion: PROTOCOL_VERSION,
            capabilities: { elicitation: {} },
            clientInfo: this.clientInfo,
        }, signal, false);
        if (!SUPPORTED_VERSIONS.includes(result.protocolVersion)) {
            throw new McpError(`the server speaks MCP ${result.protocolVersion}; this extension speaks ${SUPPORTED_VERSIONS.join(' or ')}`, { kind: 'version' });
        }
        this.protocolVersion = result.protocolVersion;
        this.serverInfo = result.serverInfo || null;
        const response = await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' }, signal);
        await this.check(response);
        return result;
    }

    /** Sends a request in the open session (opening one first, or again once after a 404). */
    async request(method, params, signal) {
        if (!this.sessionId) {
            await this.connect(signal);
        }
        try {
            return await this.exchange(method, params, signal, true);
        } catch (error) {
            if (error instanceof McpError && error.status === 404) {
                await this.connect(signal);
                return this.exchange(method, params, signal, true);
            }
            throw error;
        }
    }

    /**
     * Calls a tool; answers its structured result (or its text parsed as JSON, or the text).
     * A tool error throws with the tool's own message.
     */
    async callTool(name, args, signal) {
        const result = await this.request('tools/call', { name, arguments: args }, signal);
        const text = (result.content || []).filter((part) => part.type === 'text').map((part) => part.text).join('\n');
        if (result.isError) {
            throw new McpError(`${name}: ${text}`, { kind: 'tool' });
        }
        if (result.structuredContent !== undefined) {
            return result.structuredContent;
        }
        try {
            return JSON.parse(text);
        } catch {
            return text;
        }
    }

    /** Lists every tool (following `nextCursor`). */
    async listTools(signal) {
        const tools = [];
        let cursor;
        do {
            const page = await this.request('tools/list', cursor ? { cursor } : {}, signal);
            tools.push(...(page.tools || []));
            cursor = page.nextCursor;
        } while (cursor);
        return tools;
    }

    /** Ends the session (the server forgets it at once rather than when it idles out). */
    async close() {
        if (!this.sessionId) {
            return;
        }
        const headers = this.headers();
        this.sessionId = null;
        try {
            await this.fetch(this.url, { method: 'DELETE', headers });
        } catch {
            // The server is gone: nothing to close.
        }
    }

    async check(response) {
        if (response.ok) {
            return;
        }
        const text = await response.text().catch(() => '');
        const detail = text.trim().slice(0, 500) || response.statusText;
        if (response.status === 401 || response.status === 403) {
            throw new McpError(`the server refused the token (${response.status}): ${detail}`, { kind: 'auth', status: response.status });
        }
        throw new McpError(`the server answered ${response.status}: ${detail}`, { kind: 'http', status: response.status });
    }

    async exchange(method, params, signal, inSession) {
        const id = this.nextId++;
        const response = await this.post({ jsonrpc: '2.0', id, method, params }, signal);
        await this.check(response);
        if (!inSession) {
            const session = response.headers.get('mcp-session-id');
            if (session) {
                this.sessionId = session;
            }
        }
        const type = response.headers.get('content-type') || '';
        let message;
        if (type.includes('text/event-stream')) {
            message = await this.readStream(response, id, signal);
        } else if (type.includes('application/json')) {
            message = await response.json();
        } else {
            throw new McpError(`the server answered ${method} with ${type || 'no content type'}; is ${this.url} an MCP endpoint?`, { kind: 'protocol' });
        }
        if (message.error) {
            throw new McpError(`${method}: ${message.error.message}`, { kind: 'rpc', code: message.error.code });
        }
        return message.result;
    }

    /** Reads an SSE response until the answer to `id`, answering server requests on the way. */
    async readStream(response, id, signal) {
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        const parser = new SseParser();
        try {
            for (;;) {
                const { value, done } = await reader.read();
                if (done) {
                    throw new McpError('the server closed the stream before answering', { kind: 'protocol' });
                }
                for (const data of parser.push(decoder.decode(value, { stream: true }))) {
                    let message;
                    try {
                        message = JSON.parse(data);
                    } catch {
                        continue;
                    }
                    if (message.id === id && (message.result !== undefined || message.error !== undefined)) {
                        return message;
                    }
                    if (message.method && message.id !== undefined) {
                        await this.answer(message, signal);
                    }
                }
            }
        } finally {
            reader.cancel().catch(() => {});
        }
    }

    async answer(request, signal) {
        let reply;
        try {
            const result = await this.onRequest(request.method, request.params);
            reply = { jsonrpc: '2.0', id: request.id, result };
        } catch (error) {
            reply = { jsonrpc: '2.0', id: request.id, error: { code: -32603, message: String(error && error.message ? error.message : error) } };
        }
        const response = await this.post(reply, signal);
        await this.check(response);
    }
}
