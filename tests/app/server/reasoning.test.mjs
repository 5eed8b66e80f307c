// Reasoning models through `kvforge serve` with the openai SDK (issue 39):
// <think>...</think> returned as message.reasoning_content and streamed as
// delta.reasoning_content, chat_template_kwargs.enable_thinking reaching a
// Qwen 3-style template, a template that opens <think> itself, serve
// --reasoning-format and the request's reasoning_format; and gpt-oss's
// harmony replies (issue 38 item 5): the analysis channel as reasoning, the
// final channel as content, functions.NAME messages as tool_calls. The
// default model does not think, so a `grammar` makes it write the reply's
// shape (random words where the thoughts and the answer go); the reader
// must then find each part where the grammar put it. KVFORGE_BIN,
// KVFORGE_MODEL from the environment.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { startServer, stopServer } from './serve_process.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const words = (min, max) => `[a-z]{2,6} (" " [a-z]{2,6}){${min},${max}}`;
const thinkGrammar = `root ::= "<think>\\n" ${words(1, 3)} "\\n</think>\\n\\n" ${words(0, 2)}`;
const opened = `root ::= ${words(1, 3)} "\\n</think>\\n\\n" ${words(0, 2)}`;
const phrase = /^[a-z]{2,6}( [a-z]{2,6})*$/;

// Qwen 3's template as far as thinking goes: enable_thinking false writes an
// empty thought into the prompt.
const qwen3Template = `{%- for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
{%- if enable_thinking is defined and enable_thinking is false %}
<think>

</think>
{% endif %}
{% endif %}`;
// DeepSeek R1's newer templates open the thoughts in the prompt.
const openingTemplate = `{%- for m in messages %}{{ m.role }}: {{ m.content }}
{% endfor %}{%- if add_generation_prompt %}assistant: <think>
{% endif %}`;

const servers = {};
const clients = {};
let dir;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvforge-reasoning-'));
  const file = (name, text) => { fs.writeFileSync(path.join(dir, name), text); return path.join(dir, name); };
  const gptOss = path.join(here, '../chat/data/openai-gpt-oss-120b.jinja');
  const started = await Promise.all([
    startServer(['-c', '1024', '--chat-template', file('qwen3.jinja', qwen3Template)]),
    startServer(['-c', '1024', '--chat-template', file('open.jinja', openingTemplate),
      '--reasoning-format', 'none']),
    startServer(['-c', '2048', '--chat-template', gptOss]),
  ]);
  [servers.qwen3, servers.opening, servers.harmony] = started;
  for (const [name, s] of Object.entries(servers))
    clients[name] = new OpenAI({ baseURL: `http://127.0.0.1:${s.port}/v1`, apiKey: 'none', maxRetries: 0 });
});
after(async () => {
  for (const s of Object.values(servers)) await stopServer(s.proc);
  fs.rmSync(dir, { recursive: true, force: true });
});

const messages = [{ role: 'user', content: 'Is it going to rain?' }];

// The streamed deltas of a request, joined per field.
async function streamed(client, body) {
  const stream = await client.chat.completions.create({ ...body, stream: true });
  const out = { reasoning: '', content: '', finish: null, chunks: 0 };
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    out.reasoning += c.delta.reasoning_content ?? '';
    out.content += c.delta.content ?? '';
    if (c.finish_reason) out.finish = c.finish_reason;
    ++out.chunks;
  }
  return out;
}

test('thoughts are reasoning_content, the answer is content; streamed the same', async () => {
  const body = { messages, grammar: thinkGrammar, temperature: 1, seed: 7, max_tokens: 60 };
  const r = await clients.qwen3.chat.completions.create(body);
  const m = r.choices[0].message;
  assert.match(m.reasoning_content, phrase, JSON.stringify(m));
  assert.match(m.content, phrase, JSON.stringify(m));
  assert.equal(r.choices[0].finish_reason, 'stop');
  const s = await streamed(clients.qwen3, body);
  assert.equal(s.reasoning, m.reasoning_content);
  assert.equal(s.content, m.content);
  assert.ok(s.chunks > 4, `${s.chunks} chunks`);
});

test('enable_thinking false reaches the template', async () => {
  const count = async (kwargs) => (await clients.qwen3.chat.completions.create({
    messages, max_tokens: 1, ...(kwargs && { chat_template_kwargs: kwargs }) })).usage.prompt_tokens;
  const thinking = await count(undefined);
  assert.equal(await count({ enable_thinking: true }), thinking);
  assert.ok(await count({ enable_thinking: false }) > thinking + 3, 'the empty thought is in the prompt');
});

test('a template that opens <think>: the reply starts in the thoughts', async () => {
  const body = { messages, grammar: opened, temperature: 1, seed: 3, max_tokens: 60 };
  // serve --reasoning-format none: left in the content.
  const raw = (await clients.opening.chat.completions.create(body)).choices[0].message;
  assert.equal(raw.reasoning_content, undefined);
  assert.match(raw.content, /^[a-z ]+\n<\/think>\n\n[a-z ]+$/);
  // The request's reasoning_format, as llama-server takes it.
  const split = (await clients.opening.chat.completions.create(
    { ...body, reasoning_format: 'deepseek' })).choices[0].message;
  const [thought, answer] = raw.content.split('\n</think>\n\n');
  assert.equal(split.reasoning_content, thought);
  assert.equal(split.content, answer);
  const s = await streamed(clients.opening, { ...body, reasoning_format: 'deepseek' });
  assert.equal(s.reasoning, thought);
  assert.equal(s.content, answer);
  const legacy = (await clients.opening.chat.completions.create(
    { ...body, reasoning_format: 'deepseek-legacy' })).choices[0].message;
  assert.equal(legacy.reasoning_content, thought);
  assert.equal(legacy.content, raw.content);
});

test('bad reasoning_format is a 400 naming it', async () => {
  for (const value of ['parsed', 3]) {
    const res = await fetch(`http://127.0.0.1:${servers.qwen3.port}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages, max_tokens: 2, reasoning_format: value }) });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.param, 'reasoning_format');
  }
});

const harmonyAnswer = `root ::= "<|channel|>analysis<|message|>" ${words(1, 3)} "<|end|><|start|>assistant<|channel|>final<|message|>" ${words(0, 2)}`;
const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',  // gpt-oss's template writes it unconditionally
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const harmonyCall = `root ::= "<|channel|>analysis<|message|>" ${words(0, 2)} "<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\\"city\\": \\"" [a-z]{2,8} "\\"}"`;

test('gpt-oss: analysis is reasoning_content, final is content; streamed the same', async () => {
  const body = { messages, grammar: harmonyAnswer, temperature: 1, seed: 5, max_tokens: 400 };
  const r = await clients.harmony.chat.completions.create(body);
  const m = r.choices[0].message;
  assert.match(m.reasoning_content, phrase, JSON.stringify(m));
  assert.match(m.content, phrase, JSON.stringify(m));
  const s = await streamed(clients.harmony, body);
  assert.equal(s.reasoning, m.reasoning_content);
  assert.equal(s.content, m.content);
});

test('gpt-oss: a functions.NAME message is a tool call, whole and streamed', async () => {
  const body = { messages, tools: [weather], grammar: harmonyCall, temperature: 1, seed: 2,
    max_tokens: 400 };
  const r = await clients.harmony.chat.completions.create(body);
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
  assert.equal(c.message.tool_calls.length, 1);
  assert.equal(c.message.tool_calls[0].function.name, 'get_weather');
  assert.match(JSON.parse(c.message.tool_calls[0].function.arguments).city, /^[a-z]{2,8}$/);
  assert.equal(c.message.content, null);
  const stream = clients.harmony.chat.completions.stream(body);
  const done = await stream.finalChatCompletion();
  assert.equal(done.choices[0].finish_reason, 'tool_calls');
  assert.deepEqual(done.choices[0].message.tool_calls[0].function, c.message.tool_calls[0].function);
});

test('gpt-oss: tool_choice required needs harmony\'s special tokens in the vocabulary', async () => {
  // The default model's vocabulary has no <|channel|> token for the call grammar to name
  // (harmony_tools.test.mjs runs a gpt-oss vocabulary).
  const res = await fetch(`http://127.0.0.1:${servers.harmony.port}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages, tools: [weather], tool_choice: 'required', max_tokens: 2 }) });
  assert.equal(res.status, 400);
  const error = (await res.json()).error;
  assert.equal(error.param, 'tools');
  assert.match(error.message, /<\|channel\|>/);
});
