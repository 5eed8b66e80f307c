// What a user of llama-server or vLLM expects from `kvforge serve` (issue 26):
// --alias for the model id, an access log line per request (JSON with
// --log-format json), a 400 for request fields kvforge would otherwise
// ignore (mirostat, an unknown tool_choice), and the chat page at "/".
// Run by run_ux_tests.sh (CTest: server_ux) with KVFORGE_BIN and KVFORGE_MODEL.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, stopServer } from './serve_process.mjs';

const API_KEY = 'ux-key';
let server;
let base;
let client;

before(async () => {
  server = await startServer(['--alias', 'my-model', '--api-key', API_KEY, '--log-format', 'json',
                              '-t', '2']);
  base = `http://127.0.0.1:${server.port}`;
  client = new OpenAI({ apiKey: API_KEY, baseURL: `${base}/v1`, maxRetries: 0 });
});
after(async () => { await stopServer(server.proc); });

const auth = { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' };
const chat = (body) => fetch(`${base}/v1/chat/completions`,
                             { method: 'POST', headers: auth, body: JSON.stringify(body) });
const hello = [{ role: 'user', content: 'Who made the heaven?' }];

// The JSON access-log lines the server wrote so far.
function accessLines() {
  return server.log().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
}
async function waitForLine(pred) {
  for (let i = 0; i < 100; ++i) {
    const hit = accessLines().find(pred);
    if (hit) return hit;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail('no access-log line matched; log:\n' + server.log());
}

test('--alias names the model in /v1/models and in responses', async () => {
  const models = await client.models.list();
  assert.equal(models.data[0].id, 'my-model');
  const r = await client.chat.completions.create({ model: 'my-model', messages: hello,
                                                   max_tokens: 4 });
  assert.equal(r.model, 'my-model');
  // The file name still works as a model id, as before --alias.
  const old = await client.chat.completions.create({ model: 'kvforge-kjv-4m', messages: hello,
                                                     max_tokens: 2 });
  assert.equal(old.choices.length, 1);
});

test('access log: one JSON line per request with tokens and timings', async () => {
  const stream = await client.chat.completions.create({ messages: hello, max_tokens: 6,
                                                        stream: true, model: 'my-model',
                                                        temperature: 0 });
  let pieces = 0;
  for await (const chunk of stream) if (chunk.choices[0]?.delta?.content) ++pieces;
  assert.ok(pieces > 0);
  const line = await waitForLine((l) => l.path === '/v1/chat/completions' && l.completion_tokens === 6);
  assert.equal(line.method, 'POST');
  assert.equal(line.status, 200);
  assert.ok(line.prompt_tokens > 0);
  assert.ok(line.ttft_ms > 0 && line.ttft_ms <= line.total_ms, JSON.stringify(line));
  assert.equal(line.remote, '127.0.0.1');
  // Errors are logged too, without tokens.
  await fetch(`${base}/v1/models`);  // no key: 401
  const denied = await waitForLine((l) => l.path === '/v1/models' && l.status === 401);
  assert.equal(denied.ttft_ms, null);
  assert.equal(denied.completion_tokens, 0);
});

test('tool_choice: the four forms are served, any other is a 400 that says so', async () => {
  const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
  for (const choice of ['sometimes', { type: 'allowed_tools', allowed_tools: {} }]) {
    const res = await chat({ messages: hello, tools, tool_choice: choice, max_tokens: 2 });
    assert.equal(res.status, 400);
    const body = await res.json();
    assert.equal(body.error.param, 'tool_choice');
    assert.match(body.error.message, /not supported/);
  }
  for (const choice of ['auto', 'none', 'required', { type: 'function', function: { name: 'f' } }]) {
    const res = await chat({ messages: hello, tools, tool_choice: choice, max_tokens: 2 });
    assert.equal(res.status, 200, await res.text());
  }
});

test('unknown extension fields are a 400, not ignored; grammar and json_schema are honoured', async () => {
  for (const field of ['mirostat', 'guided_json']) {
    const res = await chat({ messages: hello, max_tokens: 2, [field]: 'x' });
    assert.equal(res.status, 400, field);
    const body = await res.json();
    assert.equal(body.error.param, field);
    assert.match(body.error.message, /not supported/);
  }
  // llama-server's constraint fields (issue 39): a malformed one is a 400 naming it.
  for (const field of ['grammar', 'json_schema']) {
    const res = await chat({ messages: hello, max_tokens: 2, [field]: 'x' });
    assert.equal(res.status, 400, field);
    assert.equal((await res.json()).error.param, field);
  }
  const res = await fetch(`${base}/v1/completions`, {
    method: 'POST', headers: auth,
    body: JSON.stringify({ prompt: 'In the beginning', max_tokens: 2, grammar: 'root ::= "a"' }) });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).choices[0].text, 'a');
  // OpenAI's bookkeeping fields are accepted (they do not change the text).
  const ok = await chat({ messages: hello, max_tokens: 2, user: 'u1', store: false,
                          metadata: { a: 'b' } });
  assert.equal(ok.status, 200, await ok.text());
});

test('GET / is the chat page: self-contained, public even with --api-key', async () => {
  const res = await fetch(`${base}/`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /text\/html/);
  const html = await res.text();
  assert.match(html, /<script>/);
  assert.match(html, /\/v1\/chat\/completions/);
  // No CDN: nothing is loaded from another origin.
  assert.doesNotMatch(html, /(src|href)\s*=\s*["']?(https?:)?\/\//i);
  assert.doesNotMatch(html, /@import|url\(\s*["']?https?:/i);
});
