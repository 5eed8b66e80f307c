// Every error `kvforge serve` answers before a reply starts reaches each client
// as the typed error it raises for that status, carrying the server's message
// (issue 41): openai (chat, responses, embeddings), the AI SDK's default
// provider (Responses API), LangChain's ChatOpenAI on chat completions and on
// the Responses API (its lc_error_code: MODEL_NOT_FOUND for an unknown model;
// ContextOverflowError for a reply past the context),
// ollama (chat, generate, embed) and @anthropic-ai/sdk (messages), streamed
// and not. One table: each status has one cheap cause, each client one call
// and one reading of its error. And a stream that fails after its 200: the
// bytes kvforge then sends (data/stream_errors.json, pinned to the server's
// writers by stream_errors_test.cpp) make each client raise the failure.
// Run by run_server_tests.sh (CTest: server_apis).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { Ollama } from 'ollama';
import { APICallError, generateText, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { ContextOverflowError } from '@langchain/core/errors';
import { startServer, stopServer } from './serve_process.mjs';

const MODEL = 'kvforge-kjv-4m';
const KEY = 'k-errors';
const MAX_BODY = 8192;
// One sequence and no queue: a streaming request holding the slot makes the next one a 429.
let gate;
// One HTTP thread: a silent connection holding it makes the next request a 503.
let crowd;

before(async () => {
  gate = await startServer(['--api-key', KEY, '--max-body', String(MAX_BODY), '--max-seqs', '1',
                            '--max-queue', '0', '-c', '2048']);
  // A long --header-timeout: the silent connection keeps the thread while the table runs.
  crowd = await startServer(['--api-key', KEY, '--http-threads', '1', '--header-timeout', '120']);
});

after(async () => {
  await stopServer(gate.proc);
  await stopServer(crowd.proc);
});

// What a call is asked to do wrong: `key`, `model`, `big` (a body past --max-body), `bad`
// (a field the server refuses, the client's own).
const HELLO = 'In the beginning';
const text = (o) => (o.big ? 'x '.repeat(MAX_BODY) : HELLO);
const baseOf = (server) => `http://127.0.0.1:${server.port}`;

const openai = (o) => new OpenAI({ baseURL: `${o.base}/v1`, apiKey: o.key, maxRetries: 0 });
const anthropic = (o) => new Anthropic({ baseURL: o.base, apiKey: o.key, maxRetries: 0 });
const ollama = (o) => new Ollama({ host: o.base, headers: { Authorization: `Bearer ${o.key}` } });
const drain = async (stream) => { for await (const part of stream) assert.ok(part); };

// The AI SDK's streamText does not throw: a failed call is an error part of its stream.
async function aiStream(o) {
  const result = streamText({ ...aiCall(o), onError: () => {} });
  for await (const part of result.fullStream) if (part.type === 'error') throw part.error;
}
function aiCall(o) {
  const content = [{ type: 'text', text: text(o) }];
  const png = new Uint8Array([137, 80, 78, 71]);
  if (o.bad) content.push({ type: 'file', data: png, mediaType: 'image/png' });
  return { model: createOpenAI({ baseURL: `${o.base}/v1`, apiKey: o.key })(o.model),
           messages: [{ role: 'user', content }], maxOutputTokens: 4, maxRetries: 0 };
}

async function langchain(o, responses, stream) {
  const llm = new ChatOpenAI({ model: o.model, apiKey: o.key, maxRetries: 0,
                               maxTokens: o.maxTokens ?? 4,
                               configuration: { baseURL: `${o.base}/v1` },
                               useResponsesApi: responses,
                               modelKwargs: o.bad ? { mirostat: 2 } : {} });
  if (stream) await drain(await llm.stream(text(o)));
  else await llm.invoke(text(o));
}

async function chatCall(o, stream) {
  const r = await openai(o).chat.completions.create({
    model: o.model, max_tokens: 4, stream, messages: [{ role: 'user', content: text(o) }],
    ...(o.bad ? { mirostat: 2 } : {}) });
  if (stream) await drain(r);
}
async function responsesCall(o, how) {
  const body = { model: o.model, input: text(o), max_output_tokens: 4,
                 ...(o.bad ? { reasoning: { effort: 'low' } } : {}) };
  if (how === 'helper') return openai(o).responses.stream(body).finalResponse();
  const r = await openai(o).responses.create({ ...body, stream: how === 'stream' });
  if (how === 'stream') await drain(r);
}
async function messagesCall(o, how) {
  const body = { model: o.model, max_tokens: 4, messages: [{ role: 'user', content: text(o) }],
                 ...(o.bad ? { stop_sequences: [''] } : {}) };
  if (how === 'helper') return anthropic(o).messages.stream(body).finalMessage();
  const r = await anthropic(o).messages.create({ ...body, stream: how === 'stream' });
  if (how === 'stream') await drain(r);
}
async function ollamaCall(o, route, stream) {
  const client = ollama(o);
  const options = { num_predict: 4, ...(o.bad ? { mirostat: 2 } : {}) };
  const r = route === 'chat'
    ? await client.chat({ model: o.model, stream, options,
                          messages: [{ role: 'user', content: text(o) }] })
    : await client.generate({ model: o.model, stream, options, prompt: text(o) });
  if (stream) await drain(r);
}
const embedBad = (o, field) => (o.bad ? field : {});

// How each client reads an error: its class for the status, the status, the server's message.
const OPENAI_TYPES = { 400: OpenAI.BadRequestError, 401: OpenAI.AuthenticationError,
                       404: OpenAI.NotFoundError, 413: OpenAI.APIError,
                       429: OpenAI.RateLimitError, 503: OpenAI.InternalServerError };
const ANTHROPIC_TYPES = { 400: Anthropic.BadRequestError, 401: Anthropic.AuthenticationError,
                          404: Anthropic.NotFoundError, 413: Anthropic.APIError,
                          429: Anthropic.RateLimitError, 503: Anthropic.InternalServerError };
const ANTHROPIC_KINDS = { 400: 'invalid_request_error', 401: 'authentication_error',
                          404: 'not_found_error', 413: 'request_too_large',
                          429: 'rate_limit_error', 503: 'overloaded_error' };
const LANGCHAIN_CODES = { 401: 'MODEL_AUTHENTICATION', 404: 'MODEL_NOT_FOUND',
                          429: 'MODEL_RATE_LIMIT' };
const retryable = (status) => status === 408 || status === 429 || status >= 500;

const READERS = {
  openai(e, status) {
    assert.ok(e instanceof OPENAI_TYPES[status], `${e.constructor.name}: ${e.message}`);
    assert.equal(e.status, status);
    if (retryable(status)) assert.equal(e.headers.get('retry-after'), '1');
    return e.error.message;
  },
  ai(e, status) {
    assert.ok(APICallError.isInstance(e), `${e.constructor.name}: ${e.message}`);
    assert.equal(e.statusCode, status);
    assert.equal(e.isRetryable, retryable(status));
    if (retryable(status)) assert.equal(e.responseHeaders['retry-after'], '1');
    return e.message;
  },
  langchain(e, status) {
    assert.equal(e.status, status, e.message);
    assert.equal(e.lc_error_code, LANGCHAIN_CODES[status], e.message);
    return e.error.message;
  },
  ollama(e, status) {
    assert.equal(e.name, 'ResponseError', e.message);
    assert.equal(e.status_code, status);
    assert.equal(typeof e.error, 'string', JSON.stringify(e.error));
    assert.equal(e.message, e.error);
    return e.error;
  },
  anthropic(e, status) {
    assert.ok(e instanceof ANTHROPIC_TYPES[status], `${e.constructor.name}: ${e.message}`);
    assert.equal(e.status, status);
    assert.equal(e.error.type, 'error', JSON.stringify(e.error));
    assert.equal(e.error.error.type, ANTHROPIC_KINDS[status]);
    if (retryable(status)) assert.equal(e.headers['retry-after'], '1');
    return e.error.error.message;
  },
};

// Each client's calls, with what its refused field is named in the server's message.
// `embeds`: not generation, so never queued behind the held slot (no 429); `streams`: a
// streamed reply, which may fail after its 200.
const CALLS = [
  ['openai', 'chat.completions', (o) => chatCall(o, false), /mirostat/],
  ['openai', 'chat.completions stream', (o) => chatCall(o, true), /mirostat/, 'streams'],
  ['openai', 'responses.create', (o) => responsesCall(o, 'create'), /reasoning/],
  ['openai', 'responses.create stream', (o) => responsesCall(o, 'stream'), /reasoning/, 'streams'],
  ['openai', 'responses.stream', (o) => responsesCall(o, 'helper'), /reasoning/, 'streams'],
  ['openai', 'embeddings.create', (o) => openai(o).embeddings.create(
    { model: o.model, input: text(o), ...embedBad(o, { dimensions: 100000 }) }), /dimensions/, 'embeds'],
  ['ai', 'generateText', (o) => generateText(aiCall(o)), /input_image/],
  ['ai', 'streamText', aiStream, /input_image/, 'streams'],
  ['langchain', 'chat completions invoke', (o) => langchain(o, false, false), /mirostat/],
  ['langchain', 'chat completions stream', (o) => langchain(o, false, true), /mirostat/, 'streams'],
  ['langchain', 'useResponsesApi invoke', (o) => langchain(o, true, false), /mirostat/],
  ['langchain', 'useResponsesApi stream', (o) => langchain(o, true, true), /mirostat/, 'streams'],
  ['ollama', 'chat', (o) => ollamaCall(o, 'chat', false), /mirostat/],
  ['ollama', 'chat stream', (o) => ollamaCall(o, 'chat', true), /mirostat/, 'streams'],
  ['ollama', 'generate', (o) => ollamaCall(o, 'generate', false), /mirostat/],
  ['ollama', 'generate stream', (o) => ollamaCall(o, 'generate', true), /mirostat/, 'streams'],
  ['ollama', 'embed', (o) => ollama(o).embed(
    { model: o.model, input: text(o), ...embedBad(o, { options: { temperature: 1 } }) }),
   /temperature/, 'embeds'],
  ['anthropic', 'messages.create', (o) => messagesCall(o, 'create'), /stop_sequences/],
  ['anthropic', 'messages.create stream', (o) => messagesCall(o, 'stream'), /stop_sequences/, 'streams'],
  ['anthropic', 'messages.stream', (o) => messagesCall(o, 'helper'), /stop_sequences/, 'streams'],
];

// Every call of the table made wrong in the way `wrong` says, on `server`, each refused
// with `status`, its client's reading of the error holding the server's message.
async function everyClientRefused(server, status, wrong, message, { skipEmbeds = false } = {}) {
  for (const [client, name, call, refusedField, kind] of CALLS) {
    if (skipEmbeds && kind === 'embeds') continue;
    const o = { base: baseOf(server), key: KEY, model: MODEL, ...wrong };
    await assert.rejects(call(o), (e) => {
      const said = READERS[client](e, status);
      assert.match(said, status === 400 ? refusedField : message, `${client} ${name}: ${said}`);
      return true;
    }, `${client} ${name}`);
  }
}

test('400: a refused field, named', async () => {
  await everyClientRefused(gate, 400, { bad: true });
});

test('401: a wrong key', async () => {
  await everyClientRefused(gate, 401, { key: 'wrong' }, /invalid or missing API key/);
});

test('404: an unknown model (LangChain: MODEL_NOT_FOUND on both APIs)', async () => {
  await everyClientRefused(gate, 404, { model: 'gpt-4.1' }, /gpt-4\.1/);
});

test('413: a body past --max-body, in each API family\'s shape', async () => {
  await everyClientRefused(gate, 413, { big: true }, new RegExp(`exceeds ${MAX_BODY} bytes`));
});

// A reply that cannot fit: LangChain raises ContextOverflowError (its agents then trim the
// history) when the message says the context window was exceeded, as OpenAI's does.
test('400 context_length_exceeded: LangChain\'s ContextOverflowError on both APIs', async () => {
  const o = { base: baseOf(gate), key: KEY, model: MODEL, maxTokens: 2040 };  // -c 2048
  for (const responses of [false, true]) {
    for (const stream of [false, true]) {
      await assert.rejects(langchain(o, responses, stream), (e) => {
        assert.ok(e instanceof ContextOverflowError, `${e.constructor.name}: ${e.message}`);
        assert.equal(e.cause.status, 400);
        assert.equal(e.cause.code, 'context_length_exceeded');
        assert.match(e.message, /plus max_tokens \(2040\) exceeds the context window of 2048/);
        return true;
      }, `responses ${responses}, stream ${stream}`);
    }
  }
});

const gauge = async (base, name) => {
  const m = await (await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${KEY}` } })).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(m)[1]);
};

test('429: the only slot held by a stream, Retry-After 1', async () => {
  const base = baseOf(gate);
  const holder = new AbortController();
  // 2000 tokens: far longer than the table takes; checked below, since a 200 would fail it anyway.
  const held = await fetch(`${base}/v1/completions`, {
    method: 'POST', signal: holder.signal,
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: HELLO, max_tokens: 2000, ignore_eos: true, stream: true }),
  });
  const reader = held.body.getReader();
  await reader.read();  // a first chunk: admitted, the slot is taken
  try {
    await everyClientRefused(gate, 429, {}, /at capacity/, { skipEmbeds: true });
    assert.equal(await gauge(base, 'kvforge_requests_in_flight'), 1, 'the slot was held throughout');
  } finally {
    holder.abort();
  }
  for (let tries = 0; tries < 100 && await gauge(base, 'kvforge_requests_in_flight') !== 0; tries++)
    await new Promise((r) => setTimeout(r, 50));
});

test('503: connections past --http-threads, in each API family\'s shape', async () => {
  const socket = net.connect(crowd.port, '127.0.0.1');  // says nothing: holds the one thread
  await new Promise((resolve) => socket.once('connect', resolve));
  try {
    // Its thread has taken it once a request on a connection of its own is answered 503.
    const probe = () => new Promise((resolve, reject) => {
      http.get({ port: crowd.port, host: '127.0.0.1', path: '/v1/models', agent: false },
               (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); })
        .on('error', reject);
    });
    let status;
    for (let tries = 0; tries < 100 && (status = await probe()) !== 503; tries++)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(status, 503, 'the silent connection holds the only thread');
    await everyClientRefused(crowd, 503, {}, /too many open connections/);
  } finally {
    socket.destroy();
  }
});

// The endings stream_errors_test.cpp pins, served as each family's route answers a stream.
const GOLDEN = JSON.parse(readFileSync(new URL('./data/stream_errors.json', import.meta.url)));
const FAILURE = 'the server cannot serve: rank 1 did not answer within 2 s';
const familyOf = (path) => (path.startsWith('/v1/messages') ? 'anthropic'
  : path.startsWith('/api/') ? 'ollama' : path.startsWith('/v1/responses') ? 'responses' : 'chat');

// How each client surfaces a failure after the 200: no status, the server's message.
const SURFACED = {
  openai(e) {
    assert.ok(e instanceof OpenAI.APIError, `${e.constructor.name}: ${e.message}`);
    assert.equal(e.status, undefined);
    return e.error.message;
  },
  ai: (e) => e.message,
  langchain: (e) => e.error.message,
  ollama(e) {
    assert.notEqual(e.name, 'ResponseError');  // the stream's error line, not an HTTP status
    return e.message;
  },
  // This SDK raises an SSE error event as an APIError whose message is the event's data.
  anthropic(e) {
    assert.ok(e instanceof Anthropic.APIError, `${e.constructor.name}: ${e.message}`);
    const data = JSON.parse(e.message);
    assert.equal(data.type, 'error');
    assert.equal(data.error.type, 'overloaded_error');
    return data.error.message;
  },
};

test('a stream failing after its 200: each streaming client raises the failure', async () => {
  const replay = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const family = familyOf(req.url);
      res.writeHead(200, { 'Content-Type': family === 'ollama' ? 'application/x-ndjson'
                                                              : 'text/event-stream' });
      res.end(GOLDEN[family]);
    });
  });
  await new Promise((resolve) => replay.listen(0, '127.0.0.1', resolve));
  try {
    const o = { base: `http://127.0.0.1:${replay.address().port}`, key: KEY, model: MODEL };
    for (const [client, name, call, , kind] of CALLS) {
      if (kind !== 'streams') continue;
      await assert.rejects(call(o), (e) => {
        assert.equal(SURFACED[client](e), FAILURE, `${client} ${name}`);
        return true;
      }, `${client} ${name}`);
    }
  } finally {
    replay.close();
  }
});
