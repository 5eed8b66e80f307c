// Embeddings on `kvforge serve` (issue 41): /v1/embeddings through the openai
// client's embeddings.create (its default base64 encoding and float), Ollama's
// /api/embed through the ollama client, equal to llama.cpp's llama-embedding
// (the committed golden), and embeddings beside a streaming chat leaving its
// greedy text as it is alone; a file that declares its pooling served with it.
// Run by run_server_tests.sh (CTest: server_apis).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { Ollama } from 'ollama';
import { startServer, stopServer } from './serve_process.mjs';

const MODEL = 'kvforge-kjv-4m';
const GOLDEN = JSON.parse(readFileSync(new URL('../embedding/data/kjv_embeddings.json',
                                               import.meta.url)));
let server;
let base;
let client;

before(async () => {
  server = await startServer(['--max-seqs', '4']);  // default pooling: last (the file states none)
  base = `http://127.0.0.1:${server.port}`;
  client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => { await stopServer(server.proc); });

const post = async (path, body) => fetch(`${base}${path}`, {
  method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
});
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const maxDiff = (a, b) => Math.max(...a.map((x, i) => Math.abs(x - b[i])));

// Bound as in tests/app/embedding/embedder_test.cpp: llama.cpp rounds the
// activations to f16 for the f16 weights, kvforge keeps f32 (measured 2.7e-5).
test('embeddings.create: unit vectors equal to llama-embedding (last pooling)', async () => {
  const cases = GOLDEN.cases.filter((c) => c.pooling === 'last');
  const res = await client.embeddings.create({ model: MODEL, input: cases.map((c) => c.text) });
  assert.equal(res.object, 'list');
  assert.equal(res.model, MODEL);
  assert.equal(res.data.length, cases.length);
  res.data.forEach((d, i) => {
    assert.equal(d.index, i);
    assert.equal(d.embedding.length, 256);
    assert.ok(Math.abs(norm(d.embedding) - 1) < 1e-5);
    assert.ok(maxDiff(d.embedding, cases[i].embedding) < 1e-4, `case ${i}`);
  });
  const tokens = await Promise.all(cases.map(async (c) =>
    (await (await post('/tokenize', { content: c.text, add_special: true })).json()).tokens));
  assert.equal(res.usage.prompt_tokens, tokens.flat().length);
  assert.equal(res.usage.total_tokens, res.usage.prompt_tokens);
});

test('base64 and float encodings, token-id input and batching give the same vector', async () => {
  const text = GOLDEN.cases[0].text;
  const b64 = await client.embeddings.create({ model: MODEL, input: text });  // SDK default: base64
  const float = await client.embeddings.create({ model: MODEL, input: [text, 'Noah'],
                                                 encoding_format: 'float' });
  assert.deepEqual(b64.data[0].embedding, float.data[0].embedding.map(Math.fround));
  const { tokens } = await (await post('/tokenize', { content: text, add_special: true })).json();
  const byIds = await client.embeddings.create({ model: MODEL, input: [tokens],
                                                 encoding_format: 'float' });
  assert.deepEqual(byIds.data[0].embedding, float.data[0].embedding);
  const dims = await client.embeddings.create({ model: MODEL, input: 'x', dimensions: 256 });
  assert.equal(dims.data[0].embedding.length, 256);
});

// `dimensions` below the width: the first components of the full vector,
// renormalised (Matryoshka truncation), on both routes and both encodings.
test('dimensions: the leading components, renormalised to unit length', async () => {
  const text = GOLDEN.cases[0].text;
  const full = (await client.embeddings.create({ model: MODEL, input: text,
                                                 encoding_format: 'float' })).data[0].embedding;
  const short = await client.embeddings.create({ model: MODEL, input: [text, 'Noah'],
                                                  dimensions: 64 });  // base64, the SDK default
  assert.equal(short.data.length, 2);
  const got = short.data[0].embedding;
  assert.equal(got.length, 64);
  const head = full.slice(0, 64);
  const norm = Math.hypot(...head);
  const diff = Math.max(...got.map((x, i) => Math.abs(x - head[i] / norm)));
  // float32 rounding of the renormalised components (|x| < 1: 6e-8 each).
  assert.ok(diff < 1e-6, `max |difference| ${diff}`);
  assert.ok(Math.abs(Math.hypot(...got) - 1) < 1e-6);
  const ollama = new Ollama({ host: base });
  const viaOllama = await ollama.embed({ model: MODEL, input: text, dimensions: 64 });
  assert.deepEqual(viaOllama.embeddings[0].map(Math.fround), got);
});

// serve --embd-normalize -1: the pooled vectors unscaled, so the default's
// unit vectors are these divided by their length; with dimensions, the head
// is left unscaled too.
test('--embd-normalize -1: raw pooled vectors, the default is their unit direction', async () => {
  const raw = await startServer(['--max-seqs', '4', '--embd-normalize', '-1']);
  try {
    const rawClient = new OpenAI({ baseURL: `http://127.0.0.1:${raw.port}/v1`, apiKey: 'unused',
                                   maxRetries: 0 });
    const text = GOLDEN.cases[0].text;
    const [got, unit] = await Promise.all([rawClient, client].map(async (c) =>
      (await c.embeddings.create({ model: MODEL, input: text, encoding_format: 'float' }))
        .data[0].embedding));
    const length = norm(got);
    assert.ok(Math.abs(length - 1) > 0.01, `a raw vector of length ${length}`);
    assert.ok(maxDiff(got.map((x) => x / length), unit) < 1e-6);
    const head = (await rawClient.embeddings.create({ model: MODEL, input: text, dimensions: 8,
                                                      encoding_format: 'float' })).data[0].embedding;
    assert.deepEqual(head, got.slice(0, 8));
  } finally {
    await stopServer(raw.proc);
  }
});

test('refusals: dimensions, unknown fields, bad input, unknown model', async () => {
  const refused = async (body, status, param) => {
    await assert.rejects(client.embeddings.create(body), (e) => {
      assert.equal(e.status, status, e.message);
      if (param) assert.equal(e.param, param);
      return true;
    });
  };
  await refused({ model: MODEL, input: 'x', dimensions: 0 }, 400, 'dimensions');
  await refused({ model: MODEL, input: 'x', dimensions: 257 }, 400, 'dimensions');
  await refused({ model: MODEL, input: 'x', dimensions: 1.5 }, 400, 'dimensions');
  await refused({ model: MODEL, input: 'x', encoding_format: 'int8' }, 400, 'encoding_format');
  await refused({ model: MODEL, input: 'x', pooling: 'mean' }, 400, 'pooling');
  await refused({ model: MODEL, input: [] }, 400, 'input');
  await refused({ model: MODEL, input: [[1, 2], 'x', { a: 1 }] }, 400, 'input');
  await refused({ model: MODEL, input: [[999999]] }, 400, 'input');
  await refused({ model: MODEL, input: 'word '.repeat(2000) }, 400, 'input');
  await refused({ model: 'text-embedding-3-small', input: 'x' }, 404, 'model');
});

test('ollama embed and the older /api/embeddings equal the OpenAI route', async () => {
  const ollama = new Ollama({ host: base });
  const input = ['In the beginning', 'And God said'];
  const res = await ollama.embed({ model: `${MODEL}:latest`, input, keep_alive: '5m' });
  const ref = await client.embeddings.create({ model: MODEL, input, encoding_format: 'float' });
  assert.equal(res.model, `${MODEL}:latest`);
  assert.deepEqual(res.embeddings, ref.data.map((d) => d.embedding));
  assert.equal(res.prompt_eval_count, ref.usage.prompt_tokens);
  const legacy = await ollama.embeddings({ model: MODEL, prompt: input[0] });
  assert.deepEqual(legacy.embedding, ref.data[0].embedding);
  // Ollama truncates an input past the context by default; "truncate": false refuses it.
  const long = 'word '.repeat(400);
  assert.equal((await ollama.embed({ model: MODEL, input: long })).prompt_eval_count, 256);
  await assert.rejects(ollama.embed({ model: MODEL, input: long, truncate: false }),
                       (e) => e.status_code === 400 && /context/.test(e.message));
  await assert.rejects(ollama.embed({ model: MODEL, input: 'x', options: { temperature: 1 } }),
                       (e) => e.status_code === 400 && /options.temperature/.test(e.message));
});

// Issue 41: 64 concurrent embedding requests beside 8 streaming chats. The
// embeddings batch with each other (embedding_batcher.h) between engine steps:
// every chat's tokens are as alone, every vector is the same bits as computed
// alone, and no KV block of the pool is held afterwards.
test('64 embeddings beside 8 streaming chats: chats and vectors as alone, no KV left', async () => {
  const chat = async (i) => {
    const stream = await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: `Tell of the flood, part ${i}` }],
      max_tokens: 24, temperature: 0, stream: true, logprobs: true });
    const tokens = [];
    for await (const chunk of stream)
      for (const t of chunk.choices[0]?.logprobs?.content ?? []) tokens.push([t.token, t.logprob]);
    return tokens;
  };
  const embed = (i) => client.embeddings.create(
    { model: MODEL, input: `verse ${i} of the book`.repeat(1 + (i % 5)), encoding_format: 'float' })
    .then((r) => r.data[0].embedding);
  const alone = [];
  for (let i = 0; i < 8; ++i) alone.push(await chat(i));
  const vectorsAlone = [];
  for (let i = 0; i < 64; ++i) vectorsAlone.push(await embed(i));
  const chats = Array.from({ length: 8 }, (_, i) => chat(i));
  const embeds = Array.from({ length: 64 }, (_, i) => embed(i));
  const [together, vectors] = await Promise.all([Promise.all(chats), Promise.all(embeds)]);
  for (let i = 0; i < 8; ++i) {
    assert.ok(alone[i].length > 0);
    assert.deepEqual(together[i], alone[i], `chat ${i}`);
  }
  for (let i = 0; i < 64; ++i) assert.deepEqual(vectors[i], vectorsAlone[i], `embedding ${i}`);
  // The gauges are set after the engine step that answered the last
  // request: a scrape right after the answers may come first.
  let metrics;
  for (let tries = 0; tries < 100; tries++) {
    metrics = await (await fetch(`${base}/metrics`)).text();
    if (/^kvforge_kv_blocks_used 0$/m.test(metrics) && /^kvforge_requests_in_flight 0$/m.test(metrics)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.match(metrics, /^kvforge_kv_blocks_used 0$/m);
  assert.match(metrics, /^kvforge_requests_in_flight 0$/m);
});

test('embeddings beside a streaming chat leave its greedy text unchanged', async () => {
  const chat = async () => {
    const stream = await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Tell of the flood' }],
      max_tokens: 24, temperature: 0, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    return text;
  };
  const alone = await chat();
  const beside = chat();
  const embeds = Array.from({ length: 8 }, (_, i) => client.embeddings.create(
    { model: MODEL, input: `verse ${i} of the book`, encoding_format: 'float' }));
  const [text, ...vectors] = await Promise.all([beside, ...embeds]);
  assert.equal(text, alone);
  for (const v of vectors) assert.equal(v.data[0].embedding.length, 256);
});

// The random-weight qwen3 file declaring its pooling (qwen3.pooling_type: 1
// mean, 3 last, the Qwen3-Embedding shape), written by `kvforge quantize f32
// --override-kv` (weights copied bit for bit) and served without --pooling:
// the start line names the file's pooling and the vectors are
// llama-embedding's for it on the same weights. Mean tells the file's
// pooling from the default (last). Bound as embedding_golden.h's kF32Bound.
test('a file declaring its pooling is served with it, without --pooling', async () => {
  const qwen3 = fileURLToPath(new URL('../../model/data/architectures/qwen3.gguf', import.meta.url));
  const golden = JSON.parse(readFileSync(new URL('../embedding/data/qwen3_embeddings.json',
                                                 import.meta.url)));
  const dir = mkdtempSync(join(tmpdir(), 'kvforge-pooling-'));
  try {
    for (const [pooling, type] of [['mean', 1], ['last', 3]]) {
      const file = join(dir, `qwen3-${pooling}.gguf`);
      execFileSync(process.env.KVFORGE_BIN, ['quantize', qwen3, file, 'f32', '--override-kv',
                                             `qwen3.pooling_type=int:${type}`], { stdio: 'ignore' });
      const s = await startServer([], file);
      try {
        assert.match(s.log(), new RegExp(`embeddings: ${pooling} pooling`));
        const c = new OpenAI({ baseURL: `http://127.0.0.1:${s.port}/v1`, apiKey: 'unused',
                               maxRetries: 0 });
        const cases = golden.cases.filter((x) => x.pooling === pooling);
        const res = await c.embeddings.create({ model: `qwen3-${pooling}`, encoding_format: 'float',
                                                input: cases.map((x) => x.text) });
        res.data.forEach((d, i) => assert.ok(maxDiff(d.embedding, cases[i].embedding) < 2e-6,
                                             `${pooling}: ${cases[i].text}`));
        assert.equal(res.usage.prompt_tokens, cases.reduce((n, x) => n + x.tokens.length, 0));
      } finally {
        await stopServer(s.proc);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
