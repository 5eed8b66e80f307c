// Prompt tokens served from the prefix cache, as each API reports them (issue 41):
// chat completions' usage.prompt_tokens_details.cached_tokens (streamed and not),
// the Responses API's usage.input_tokens_details.cached_tokens and Anthropic's
// usage.cache_read_input_tokens (with input_tokens then the rest of the prompt). A first request reports 0; the same request again
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

// Anthropic counts differently: input_tokens is only the part of the prompt not read from a
// cache (cache_read_input_tokens) nor written at a cache_control breakpoint
// (cache_creation_input_tokens, always 0 here); the three add up to the prompt.
test('anthropic messages: input_tokens without the cache_read_input_tokens, streamed and not',
     async () => {
  const body = { model: MODEL, max_tokens: 3, temperature: 0, system: system('the psalms'),
                 messages: [{ role: 'user', content: 'Sing a psalm' }] };
  const { input_tokens: prompt } = await anthropic.messages.countTokens(
    { model: MODEL, system: body.system, messages: body.messages });
  const usages = [];
  const cached = await firstThenRepeat(async () => {
    const msg = await anthropic.messages.create(body);
    usages.push(msg.usage);
    return msg.usage.cache_read_input_tokens;
  });
  assert.deepEqual(usages[0], { input_tokens: prompt, cache_creation_input_tokens: 0,
                                cache_read_input_tokens: 0, output_tokens: 3 });
  assert.deepEqual(usages[1], { input_tokens: prompt - cached, cache_creation_input_tokens: 0,
                                cache_read_input_tokens: cached, output_tokens: 3 });
  // Streamed: message_start already carries the split (the SDK's final message takes its input
  // counts from there), and message_delta repeats it with the output count.
  const events = [];
  const stream = anthropic.messages.stream(body);
  stream.on('streamEvent', (ev) => events.push(structuredClone(ev)));  // the SDK updates its own
  const final = await stream.finalMessage();
  assert.deepEqual(final.usage, usages[1]);
  const start = events.find((ev) => ev.type === 'message_start');
  assert.deepEqual(start.message.usage, { ...usages[1], output_tokens: 0 });
  const delta = events.find((ev) => ev.type === 'message_delta');
  assert.deepEqual(delta.usage, usages[1]);
});
