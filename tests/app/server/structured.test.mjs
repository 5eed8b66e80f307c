// Structured output through `kvforge serve` (issue 39): every reply under
// response_format json_schema parses and validates with ajv, for a corpus of
// schemas (schema_corpus.mjs), streamed and not, with n > 1, beside
// unconstrained neighbours; llama-server's grammar and json_schema fields;
// bad schemas and grammars are 400s naming the problem. KVFORGE_BIN and
// KVFORGE_MODEL from the environment (run_server_tests.sh sets them; it also
// runs this file on a random-weight model, the worst case for a grammar).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { startServer, stopServer } from './serve_process.mjs';
import { SCHEMAS } from './schema_corpus.mjs';

let server, client, base;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
// Static: 4 slots of 64 prompt + 800 reply tokens.
const mode = process.env.KVFORGE_SERVER_MODE === 'static'
  ? ['--static', '--static-slots', '4', '--max-prompt-len', '64', '--min-response-len', '800'] : [];

before(async () => {
  // A context of 1024 (the model was trained on 256): room for the longest replies the
  // corpus allows, which a model that never closes a quote by choice runs up to.
  server = await startServer(['-c', '1024', ...mode]);
  base = `http://127.0.0.1:${server.port}/v1`;
  client = new OpenAI({ baseURL: base, apiKey: 'none', maxRetries: 0 });
});
after(async () => { if (server) await stopServer(server.proc); });

const prompt = [{ role: 'user', content: 'Reply in JSON.' }];
const fmt = (s) => ({ type: 'json_schema', json_schema: { name: s.name, schema: s.schema, strict: true } });

function check(s, text, finish) {
  assert.equal(finish, 'stop', `${s.name}: finish_reason ${finish}, reply ${text}`);
  let value;
  assert.doesNotThrow(() => { value = JSON.parse(text); }, `${s.name}: not JSON: ${text}`);
  const validate = ajv.compile(s.schema);
  assert.ok(validate(value), `${s.name}: ${text}\n${JSON.stringify(validate.errors)}`);
}

test('every schema of the corpus: replies validate (n = 2, sampled)', async () => {
  assert.ok(SCHEMAS.length >= 40);
  for (const s of SCHEMAS) {
    const r = await client.chat.completions.create({
      messages: prompt, response_format: fmt(s), n: 2, temperature: 1, seed: 5, max_tokens: 800 });
    for (const c of r.choices) check(s, c.message.content, c.finish_reason);
  }
});

test('every schema of the corpus: streamed replies validate (greedy)', async () => {
  for (const s of SCHEMAS) {
    const stream = await client.chat.completions.create({
      messages: prompt, response_format: fmt(s), temperature: 0, max_tokens: 800, stream: true });
    let text = '', finish = null;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        text += c.delta?.content ?? '';
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    check(s, text, finish);
  }
});

test('16 concurrent requests, constrained beside unconstrained', async () => {
  const picked = SCHEMAS.filter((_, i) => i % 5 === 0).slice(0, 8);
  const jobs = [];
  for (let i = 0; i < 16; ++i) {
    const s = picked[i % picked.length];
    const constrained = i % 2 === 0;
    jobs.push(client.chat.completions.create({
      messages: prompt, temperature: 0.8, seed: i, max_tokens: constrained ? 800 : 40,
      ...(constrained ? { response_format: fmt(s) } : {}) }).then((r) => ({ r, s, constrained })));
  }
  for (const { r, s, constrained } of await Promise.all(jobs))
    if (constrained) check(s, r.choices[0].message.content, r.choices[0].finish_reason);
});

test('a constrained reply does not depend on its neighbours (greedy)', async () => {
  const s = SCHEMAS.find((x) => x.name === 'nested');
  const alone = await client.chat.completions.create({ messages: prompt, response_format: fmt(s), temperature: 0, max_tokens: 800 });
  const crowd = await Promise.all(Array.from({ length: 6 }, (_, i) => client.chat.completions.create(
    i === 3 ? { messages: prompt, response_format: fmt(s), temperature: 0, max_tokens: 800 }
            : { messages: [{ role: 'user', content: 'x'.repeat(i * 7 + 1) }], temperature: 1, seed: i, max_tokens: 30 })));
  assert.equal(crowd[3].choices[0].message.content, alone.choices[0].message.content);
});

test('json_object, llama-server grammar and json_schema fields', async () => {
  const obj = await client.chat.completions.create({ messages: prompt, response_format: { type: 'json_object' }, max_tokens: 800, seed: 1 });
  const v = JSON.parse(obj.choices[0].message.content);
  assert.equal(typeof v, 'object');
  assert.ok(v !== null && !Array.isArray(v));
  const post = (body) => fetch(`${base}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: prompt, max_tokens: 64, ...body }) });
  const g = await (await post({ grammar: 'root ::= ("yes" | "no") "!"' })).json();
  assert.match(g.choices[0].message.content, /^(yes|no)!$/);
  const js = await (await post({ json_schema: { type: 'integer', minimum: 3, maximum: 7 }, seed: 2 })).json();
  const n = JSON.parse(js.choices[0].message.content);
  assert.ok(Number.isInteger(n) && n >= 3 && n <= 7, js.choices[0].message.content);
  const done = await client.completions.create({ prompt: 'The answer:', max_tokens: 64, grammar: 'root ::= [0-9]{2}' });
  assert.match(done.choices[0].text, /^[0-9]{2}$/);
});

test('bad schemas and grammars are 400s naming the problem', async () => {
  const post = async (body) => {
    const r = await fetch(`${base}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: prompt, ...body }) });
    return { status: r.status, body: await r.json() };
  };
  let r = await post({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'number', multipleOf: 3 } } } });
  assert.equal(r.status, 400);
  assert.match(r.body.error.message, /unsupported keyword 'multipleOf'/);
  assert.equal(r.body.error.param, 'response_format');
  r = await post({ grammar: 'root ::= root "a"' });
  assert.equal(r.status, 400);
  assert.match(r.body.error.message, /left recursion/);
  r = await post({ grammar: 'root ::= "a"', json_schema: { type: 'string' } });
  assert.equal(r.status, 400);
  r = await post({ response_format: { type: 'json_schema', json_schema: { name: 'x' } } });
  assert.equal(r.status, 400);
  const big = { enum: Array.from({ length: 10000 }, (_, i) => `v${i}`) };
  const t0 = Date.now();
  r = await post({ json_schema: big });
  assert.equal(r.status, 400);
  assert.ok(Date.now() - t0 < 2000);
  // The server still serves.
  const ok = await client.chat.completions.create({ messages: prompt, max_tokens: 4 });
  assert.ok(ok.choices[0].message.content.length >= 0);
});

test('openai SDK: zodResponseFormat + chat.completions.parse', async () => {
  const { z } = await import('zod');
  const { zodResponseFormat } = await import('openai/helpers/zod');
  const Event = z.object({
    name: z.string().max(10),
    day: z.enum(['mon', 'tue', 'wed']),
    guests: z.array(z.string().max(8)).max(3),
    note: z.string().max(6).nullable(),
  });
  const r = await client.chat.completions.parse({
    messages: prompt, response_format: zodResponseFormat(Event, 'event'), max_tokens: 800, seed: 3 });
  const parsed = r.choices[0].message.parsed;
  assert.ok(Event.safeParse(parsed).success, JSON.stringify(parsed));
});
