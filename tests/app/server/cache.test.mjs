// Prompt tokens served from the prefix cache, as each API reports them (issue 41):
// chat completions' usage.prompt_tokens_details.cached_tokens (streamed and not),
// the Responses API's usage.input_tokens_details.cached_tokens and Anthropic's
// usage.cache_read_input_tokens. A first request reports 0; the same request again
// reports what the engine reused for it: the growth of
// kvforge_prefix_cache_tokens_reused_total, whole blocks of 16 (never the last token).
// Run by run_server_tests.sh (CTest: server_apis).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startServer, stopServer } from './serve_process.mjs';

const MODEL = 'kvforge-kjv-4m';
const BLOCK = 16;
let server;
let base;
let openai;
let anthropic;

before(async () => {
  server = await startServer(['--max-seqs', '2', '-c', '512', '--block-size', String(BLOCK)]);
  base = `http://127.0.0.1:${server.port}`;
  openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: base, apiKey: 'unused', maxRetries: 0 });
});

after(async () => { await stopServer(server.proc); });

async function tokensReused() {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^kvforge_prefix_cache_tokens_reused_total (\d+)$/m.exec(text)[1]);
}

// Runs `request` and returns [its cached count, what the engine reused meanwhile].
async function measured(request) {
  const before = await tokensReused();
  const cached = await request();
  return [cached, (await tokensReused()) - before];
}

// A system prompt of several blocks that no other test shares.
const system = (topic) => `Thou art a scribe of ${topic}; answer in the words of the King ` +
  'James Bible, with verses of the prophets and the psalms, and keep the sayings short.';

async function firstThenRepeat(request) {
  const [first, reusedFirst] = await measured(request);
  assert.equal(first, 0, 'a first request is served from no cache');
  assert.equal(reusedFirst, 0);
  const [again, reused] = await measured(request);
  assert.ok(again >= BLOCK, `the repeat reports cached tokens (${again})`);
  assert.equal(again % BLOCK, 0, 'whole blocks');
  assert.equal(again, reused, 'what the engine reused for it');
  return again;
}

test('chat completions: prompt_tokens_details.cached_tokens, streamed and not', async () => {
  const messages = [{ role: 'system', content: system('the kings') },
                    { role: 'user', content: 'Who built the temple?' }];
  const create = async () => {
    const r = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 3,
                                                     temperature: 0 });
    assert.ok(r.usage.prompt_tokens_details.cached_tokens < r.usage.prompt_tokens);
    return r.usage.prompt_tokens_details.cached_tokens;
  };
  const cached = await firstThenRepeat(create);
  const stream = await openai.chat.completions.create({
    model: MODEL, messages, max_tokens: 3, temperature: 0, stream: true,
    stream_options: { include_usage: true } });
  let usage = null;
  for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
  assert.equal(usage.prompt_tokens_details.cached_tokens, cached);
});

test('responses: usage.input_tokens_details.cached_tokens', async () => {
  await firstThenRepeat(async () => {
    const r = await openai.responses.create({ model: MODEL, instructions: system('the judges'),
                                              input: 'Who judged Israel?', max_output_tokens: 3,
                                              temperature: 0, store: false });
    return r.usage.input_tokens_details.cached_tokens;
  });
});

test('anthropic messages: usage.cache_read_input_tokens, streamed and not', async () => {
  const body = { model: MODEL, max_tokens: 3, temperature: 0, system: system('the psalms'),
                 messages: [{ role: 'user', content: 'Sing a psalm' }] };
  const cached = await firstThenRepeat(async () => {
    const msg = await anthropic.messages.create(body);
    return msg.usage.cache_read_input_tokens;
  });
  const events = [];
  for await (const ev of anthropic.messages.stream(body)) events.push(ev);
  const delta = events.find((ev) => ev.type === 'message_delta');
  assert.equal(delta.usage.cache_read_input_tokens, cached);
});
