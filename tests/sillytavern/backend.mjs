// A canned OpenAI-compatible chat-completion backend for the SillyTavern end-to-end test: it
// answers `GET /v1/models` and `POST /v1/chat/completions` (streamed or not) with the replies
// queued by the test, in order, and keeps every request's messages so the test can read the
// prompt SillyTavern sent.

import { createServer } from 'node:http';

export async function startBackend() {
    const replies = [];
    const requests = [];
    const server = createServer((request, response) => {
        let body = '';
        request.on('data', (chunk) => { body += chunk; });
        request.on('end', () => {
            if (request.method === 'GET' && request.url.endsWith('/models')) {
                response.writeHead(200, { 'content-type': 'application/json' });
                response.end(JSON.stringify({ object: 'list', data: [{ id: 'canned-model', object: 'model' }] }));
                return;
            }
            if (request.method !== 'POST' || !request.url.endsWith('/chat/completions')) {
                response.writeHead(404).end();
                return;
            }
            const parsed = JSON.parse(body);
            requests.push(parsed);
            const text = replies.shift() ?? 'The story goes on.';
            if (parsed.stream) {
                response.writeHead(200, { 'content-type': 'text/event-stream' });
                // A few chunks, so the reply is really streamed.
                const pieces = text.match(/[\s\S]{1,7}/g) ?? [''];
                for (const piece of pieces) {
                    response.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'canned-model', choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] })}\n\n`);
                }
                response.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'canned-model', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
                response.end('data: [DONE]\n\n');
                return;
            }
            response.writeHead(200, { 'content-type': 'application/json' });
            response.end(JSON.stringify({
                id: 'c', object: 'chat.completion', model: 'canned-model',
                choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
                usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
            }));
        });
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
        url: `http://127.0.0.1:${server.address().port}/v1`,
        replies,
        requests,
        close: () => new Promise((resolve) => server.close(resolve)),
    };
}
