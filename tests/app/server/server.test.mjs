// Integration tests of `kvforge serve` (started here on a free loopback port)
// through the official OpenAI Node client, plus raw HTTP for error cases and
// a load test. Run by run_server_tests.sh (CTest: server_chat) once per
// engine: KVFORGE_SERVER_MODE=paged (the batching engine, default) or static
// (`serve --static`: 4 static slots, capacity 192 + 64 = the model's 256).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import OpenAI from 'openai';

const BIN = process.env.KVFORGE_BIN;
const MODEL_PATH = process.env.KVFORGE_MODEL;
const MODEL = 'kvforge-kjv-4m';
const API_KEY = 'test-key-123';
const PROMPT = 'In the beginning';
const MODE = process.env.KVFORGE_SERVER_MODE ?? 'paged';
const STATIC = MODE === 'static';
const ENGINE_ARGS = STATIC
  ? ['--static', '--static-slots', '4', '--max-prompt-len', '192', '--min-response-len', '64',
     '--prefill-chunk', '64', '--generate-variants', '64,128,256', '--max-queue', '96']
  : ['--max-seqs', '32', '--max-queue', '64'];  // both: room for the load test's 80 clients
const KV_UNITS = STATIC ? 4 : null;  // static: the KV "blocks" in /metrics are the slots
// Streaming clients of the load test (plus a quarter as many that disconnect);
// fewer under ThreadSanitizer (scripts/test.sh), where every step is ~10x slower.
const LOAD_CLIENTS = Number(process.env.KVFORGE_SERVER_LOAD_CLIENTS ?? 64);
const QUITTERS = Math.max(4, LOAD_CLIENTS / 4);

let server;
let base;
let client;
let serverLog = '';

// Starts `kvforge serve` with `args` on a free port; resolves to { proc, port, log() }.
async function startServer(args) {
  const proc = spawn(BIN, ['serve', '-m', MODEL_PATH, '--port', '0', ...args],
                     { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stdout.on('data', (d) => { log += d; });
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start:\n' + log)), 60000);
    proc.stderr.on('data', (d) => {
      log += d;
      const m = /listening on http:\/\/[\d.]+:(\d+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    proc.on('exit', (code) => reject(new Error(`server exited (${code}):\n` + log)));
  });
  return { proc, port, log: () => log };
}

async function stopServer(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  proc.kill('SIGTERM');
  await exited;
}

let started;
before(async () => {
  started = await startServer(['--api-key', API_KEY, '-t', '2', ...ENGINE_ARGS, '--max-n', '4',
                               '--max-body', '65536']);
  server = started.proc;
  base = `http://127.0.0.1:${started.port}`;
  client = new OpenAI({ apiKey: API_KEY, baseURL: `${base}/v1`, maxRetries: 0, timeout: 120000 });
});

after(async () => {
  if (!server) return;
  await stopServer(server);
  serverLog = started.log();
  // run_server_tests.sh shows the server's side when a test fails.
  if (process.env.KVFORGE_SERVER_LOG_FILE) writeFileSync(process.env.KVFORGE_SERVER_LOG_FILE, serverLog);
  if (/Sanitizer|runtime error/.test(serverLog)) console.error(serverLog);
  assert.match(serverLog, /kvforge serve: stopped/, 'clean shutdown on SIGTERM');
  assert.doesNotMatch(serverLog, /ThreadSanitizer|AddressSanitizer|runtime error/, 'sanitizers quiet');
});

function runCli(prompt, n) {
  // `kvforge run -q` prints the prompt, the generated text, then a newline.
  const out = execFileSync(BIN, ['run', '-m', MODEL_PATH, '-p', prompt, '-n', String(n),
                                 '--temp', '0', '-q', '-t', '2'], { encoding: 'utf8' });
  assert.ok(out.startsWith(prompt) && out.endsWith('\n'));
  return out.slice(prompt.length, -1);
}

async function metrics() {
  const res = await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${API_KEY}` } });
  assert.equal(res.status, 200);
  const text = await res.text();
  const values = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    values[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return { text, values };
}

async function raw(method, path, { body, headers = {}, auth = true } = {}) {
  const h = { ...headers };
  if (auth) h.Authorization = `Bearer ${API_KEY}`;
  if (body !== undefined && !h['Content-Type']) h['Content-Type'] = 'application/json';
  const res = await fetch(`${base}${path}`, { method, headers: h, body });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

test(`[${MODE}] the server runs the ${MODE} engine`, async () => {
  serverLog = started.log();
  if (STATIC) {
    assert.match(serverLog, /static pipeline: max_prompt_len 192, min_response_len 64 \(capacity 256\), prefill chunk 64, variants 64,128,256, slots 4/);
  } else {
    assert.match(serverLog, /KV pool \d+ blocks of 16/);
  }
  const m = (await metrics()).values;
  if (KV_UNITS !== null) assert.equal(m.kvforge_kv_blocks_total, KV_UNITS);
  assert.equal(m.kvforge_kv_blocks_used, 0);
});

test(`[${MODE}] a 202-token prompt: over static max_prompt_len 192, within the paged context`, async () => {
  const body = JSON.stringify({ prompt: 'and the '.repeat(100), max_tokens: 8, temperature: 0 });
  const r = await raw('POST', '/v1/completions', { body });
  if (STATIC) {
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.error.message, /the prompt is 202 tokens, over the static pipeline's max_prompt_len of 192/);
    assert.equal(r.json.error.param, 'prompt');
    assert.equal(r.json.error.code, 'context_length_exceeded');
  } else {
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.usage.prompt_tokens, 202);
  }
});

test(`[${MODE}] --overflow truncate-left keeps a long prompt's last max_prompt_len tokens`, { skip: !STATIC }, async () => {
  const s = await startServer(['-t', '2', ...ENGINE_ARGS, '--overflow', 'truncate-left']);
  try {
    const res = await fetch(`http://127.0.0.1:${s.port}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: 'and the '.repeat(100), max_tokens: 8, temperature: 0 }) });
    const j = await res.json();
    assert.equal(res.status, 200, JSON.stringify(j));
    assert.equal(j.usage.prompt_tokens, 192, 'usage counts the tokens kept');
    assert.equal(j.usage.completion_tokens, 8);
  } finally {
    await stopServer(s.proc);
  }
  assert.doesNotMatch(s.log(), /ThreadSanitizer|AddressSanitizer|runtime error/, s.log());
});

test('models and health', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [MODEL]);
  const health = await raw('GET', '/health', { auth: false });
  assert.equal(health.status, 200);
  assert.equal(health.json.status, 'ok');
});

test('greedy completion equals `kvforge run`', async () => {
  const expected = runCli(PROMPT, 40);
  const r = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 40,
                                              temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.match(r.id, /^cmpl-/);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].text, expected);
  assert.ok(['length', 'stop'].includes(r.choices[0].finish_reason));
  assert.equal(r.usage.prompt_tokens > 0, true);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  if (r.choices[0].finish_reason === 'length') assert.equal(r.usage.completion_tokens, 40);
});

test('streaming completion matches non-streaming, with usage', async () => {
  const whole = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 30,
                                                  temperature: 0 });
  const stream = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 30,
                                                   temperature: 0, stream: true,
                                                   stream_options: { include_usage: true } });
  let text = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.ok(chunks > 3, 'several chunks');
  assert.equal(text, whole.choices[0].text);
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.deepEqual(usage, whole.usage);
});

test('chat, streaming and not, agree; role and finish reported', async () => {
  const messages = [{ role: 'system', content: 'Speak as the scripture.' },
                    { role: 'user', content: 'Who made the heaven and the earth?' }];
  const whole = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 24,
                                                       temperature: 0 });
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.choices[0].message.role, 'assistant');
  assert.ok(whole.choices[0].message.content.length > 0);
  const stream = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 24,
                                                        temperature: 0, stream: true });
  let text = '';
  let role = null;
  let finish = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    const d = chunk.choices[0];
    if (d.delta.role) role = d.delta.role;
    if (d.delta.content) text += d.delta.content;
    if (d.finish_reason) finish = d.finish_reason;
  }
  assert.equal(role, 'assistant');
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, whole.choices[0].finish_reason);
});

test('n, seed, stop, logprobs', async () => {
  const a = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 16,
                                              temperature: 1, seed: 42, n: 3 });
  const b = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 16,
                                              temperature: 1, seed: 42, n: 3 });
  assert.deepEqual(a.choices.map((c) => c.index), [0, 1, 2]);
  assert.deepEqual(a.choices.map((c) => c.text), b.choices.map((c) => c.text), 'seeded = replayable');

  const greedy = (await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 40,
                                                    temperature: 0 })).choices[0].text;
  const word = greedy.trim().split(/\s+/)[3];
  const cut = greedy.indexOf(word);
  const stopped = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 40,
                                                    temperature: 0, stop: [word] });
  assert.equal(stopped.choices[0].text, greedy.slice(0, cut));
  assert.equal(stopped.choices[0].finish_reason, 'stop');

  const lp = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'And God said' }], max_tokens: 8,
    temperature: 0, logprobs: true, top_logprobs: 2 });
  const content = lp.choices[0].logprobs.content;
  assert.equal(content.length, lp.usage.completion_tokens);
  for (const t of content) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 2);
    assert.ok(t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob);
    assert.ok(Math.abs(t.top_logprobs[0].logprob - t.logprob) < 1e-4, 'greedy picks the top token');
  }
});

// Each: [what, method, path, options, status, message substring]
const long = 'word '.repeat(20000);
const BAD = [
  ['no API key', 'POST', '/v1/completions', { body: '{"prompt":"x"}', auth: false }, 401, 'API key'],
  ['wrong API key', 'POST', '/v1/completions', { body: '{"prompt":"x"}', auth: false, headers: { Authorization: 'Bearer nope' } }, 401, 'API key'],
  ['unknown route', 'GET', '/v2/nothing', {}, 404, 'no route for GET /v2/nothing'],
  ['wrong method', 'GET', '/v1/completions', {}, 405, 'method GET is not allowed'],
  ['wrong method on models', 'POST', '/v1/models', { body: '{}' }, 405, 'use GET'],
  ['body too large', 'POST', '/v1/completions', { body: JSON.stringify({ prompt: 'x'.repeat(70000) }) }, 413, 'request body exceeds 65536 bytes'],
  ['empty body', 'POST', '/v1/completions', { body: '' }, 400, 'request body is empty'],
  ['malformed JSON', 'POST', '/v1/completions', { body: '{"prompt": "x",' }, 400, 'not valid JSON'],
  ['JSON array body', 'POST', '/v1/chat/completions', { body: '[]' }, 400, 'must be a JSON object'],
  ['invalid UTF-8', 'POST', '/v1/completions', { body: Buffer.from([0x7b, 0x22, 0x70, 0x72, 0x6f, 0x6d, 0x70, 0x74, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]) }, 400, 'not valid UTF-8'],
  ['unknown model', 'POST', '/v1/completions', { body: '{"model":"gpt-4","prompt":"x"}' }, 404, "The model 'gpt-4' does not exist"],
  ['missing prompt', 'POST', '/v1/completions', { body: '{"model":"kvforge-kjv-4m"}' }, 400, "'prompt' is required"],
  ['missing messages', 'POST', '/v1/chat/completions', { body: '{"model":"kvforge-kjv-4m"}' }, 400, "'messages' is required"],
  ['empty messages', 'POST', '/v1/chat/completions', { body: '{"messages":[]}' }, 400, "'messages' must not be empty"],
  ['bad role', 'POST', '/v1/chat/completions', { body: '{"messages":[{"role":"king","content":"x"}]}' }, 400, "got 'king'"],
  ['content wrong type', 'POST', '/v1/chat/completions', { body: '{"messages":[{"role":"user","content":7}]}' }, 400, 'must be a string or an array of text parts'],
  ['image content', 'POST', '/v1/chat/completions', { body: '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}' }, 400, "only 'text' content parts"],
  ['max_tokens zero', 'POST', '/v1/completions', { body: '{"prompt":"x","max_tokens":0}' }, 400, "'max_tokens' must be at least 1"],
  ['max_tokens absurd', 'POST', '/v1/completions', { body: '{"prompt":"x","max_tokens":99999999}' }, 400, "'max_tokens' must be at most 256"],
  ['max_tokens wrong type', 'POST', '/v1/completions', { body: '{"prompt":"x","max_tokens":"many"}' }, 400, 'must be an integer'],
  ['prompt + max_tokens over context', 'POST', '/v1/completions', { body: JSON.stringify({ prompt: 'and the '.repeat(60), max_tokens: 200 }) }, 400, 'exceeds the context window'],
  ['prompt longer than context', 'POST', '/v1/completions', { body: JSON.stringify({ prompt: long.slice(0, 60000) }) }, 400, STATIC ? "over the static pipeline's max_prompt_len of 192" : 'exceeds the context window of 256 tokens'],
  ['token id outside vocab', 'POST', '/v1/completions', { body: '{"prompt":[1, 99999]}' }, 400, 'outside the vocabulary'],
  ['temperature out of range', 'POST', '/v1/completions', { body: '{"prompt":"x","temperature":5}' }, 400, "'temperature' must be in [0, 2]"],
  ['top_p out of range', 'POST', '/v1/completions', { body: '{"prompt":"x","top_p":1.5}' }, 400, "'top_p' must be in (0, 1]"],
  ['n too large', 'POST', '/v1/completions', { body: '{"prompt":"x","n":9}' }, 400, "'n' must be at most 4"],
  ['bad stop', 'POST', '/v1/completions', { body: '{"prompt":"x","stop":[""]}' }, 400, "'stop' strings must not be empty"],
  ['stop wrong type', 'POST', '/v1/chat/completions', { body: '{"messages":[{"role":"user","content":"x"}],"stop":{"a":1}}' }, 400, "'stop' must be a string or an array"],
  ['penalty out of range', 'POST', '/v1/completions', { body: '{"prompt":"x","presence_penalty":-3}' }, 400, "'presence_penalty' must be in [-2, 2]"],
  ['stream not boolean', 'POST', '/v1/completions', { body: '{"prompt":"x","stream":1}' }, 400, "'stream' must be a boolean"],
  ['stream_options without stream', 'POST', '/v1/chat/completions', { body: '{"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}' }, 400, "only allowed when 'stream' is true"],
  ['top_logprobs without logprobs', 'POST', '/v1/chat/completions', { body: '{"messages":[{"role":"user","content":"x"}],"top_logprobs":3}' }, 400, "requires 'logprobs'"],
  ['nested too deep', 'POST', '/v1/completions', { body: '{"prompt":' + '['.repeat(100) + ']'.repeat(100) + '}' }, 400, 'nested deeper than'],
  ['batched prompts', 'POST', '/v1/completions', { body: '{"prompt":["a","b"]}' }, 400, 'batched prompts'],
];

test(`raw HTTP: ${BAD.length} bad inputs get OpenAI-shaped errors`, async () => {
  assert.ok(BAD.length >= 25);
  for (const [what, method, path, opts, status, message] of BAD) {
    const r = await raw(method, path, opts);
    assert.equal(r.status, status, `${what}: status (body ${r.text})`);
    assert.ok(r.json && r.json.error, `${what}: error JSON (body ${r.text})`);
    assert.equal(typeof r.json.error.message, 'string', what);
    assert.ok(r.json.error.message.includes(message), `${what}: message "${r.json.error.message}" should contain "${message}"`);
    assert.ok('type' in r.json.error && 'param' in r.json.error && 'code' in r.json.error, what);
  }
  // The client maps statuses to its error classes.
  await assert.rejects(client.completions.create({ model: MODEL, prompt: 'x', max_tokens: 0 }),
                       (e) => e instanceof OpenAI.BadRequestError && e.status === 400);
  const noKey = new OpenAI({ apiKey: 'wrong', baseURL: `${base}/v1`, maxRetries: 0 });
  await assert.rejects(noKey.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
  // Still serving.
  assert.equal((await raw('GET', '/health', { auth: false })).status, 200);
});

test(`load: ${LOAD_CLIENTS} streaming clients plus ${QUITTERS} that disconnect mid-stream`, async () => {
  const before = (await metrics()).values;
  const full = Array.from({ length: LOAD_CLIENTS }, async (_, i) => {
    const stream = await client.completions.create({ model: MODEL, prompt: `${PROMPT} ${i}`,
                                                     max_tokens: 48, temperature: 0.8, seed: i,
                                                     stream: true });
    let finish = null;
    let pieces = 0;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        pieces++;
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    assert.ok(['stop', 'length'].includes(finish), `client ${i} finished (${finish})`);
    assert.ok(pieces > 0);
  });
  const quitters = Array.from({ length: QUITTERS }, async (_, i) => {
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model: MODEL, messages: [{ role: 'user', content: `Tell of day ${i}` }], max_tokens: 200,
        stream: true },
      { signal: controller.signal });
    let n = 0;
    try {
      for await (const chunk of stream) {
        if (++n === 3) controller.abort();
      }
    } catch (e) {
      if (!(e instanceof OpenAI.APIUserAbortError) && e.name !== 'AbortError') throw e;
    }
  });
  await Promise.all([...full, ...quitters]);

  // Every KV block comes back; no request failed on the server's side. The
  // server counts a response once it has written it, which can be after the
  // client has read its last chunk: wait for the counts as well.
  const ok = (k) => (m[k] ?? 0) - (before[k] ?? 0);
  const completed = 'kvforge_requests_total{endpoint="/v1/completions",status="200"}';
  let m;
  for (let tries = 0; tries < 100; tries++) {
    m = (await metrics()).values;
    if (m.kvforge_kv_blocks_used === 0 && m.kvforge_requests_in_flight === 0 &&
        ok(completed) >= LOAD_CLIENTS)
      break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(m.kvforge_kv_blocks_used, 0, 'KV pool fully free');
  assert.equal(m.kvforge_kv_blocks_free, m.kvforge_kv_blocks_total);
  assert.equal(m.kvforge_requests_in_flight, 0);
  assert.equal(m.kvforge_sequences_running, 0);
  for (const [key, v] of Object.entries(m))
    if (key.startsWith('kvforge_requests_total') && /status="5\d\d"/.test(key)) assert.equal(v, 0, key);
  assert.equal(ok(completed), LOAD_CLIENTS);
  assert.ok(ok('kvforge_client_disconnects_total') >= 1, 'disconnects were noticed and aborted');
  assert.ok(m['kvforge_time_to_first_token_seconds_count'] >= LOAD_CLIENTS);
  assert.equal((await raw('GET', '/health', { auth: false })).status, 200);
});

test('a non-streaming request whose client disconnects is aborted and its KV freed', async () => {
  const key499 = 'kvforge_requests_total{endpoint="/v1/completions",status="499"}';
  const before = (await metrics()).values;
  const controller = new AbortController();
  const pending = fetch(`${base}/v1/completions`, {
    method: 'POST', signal: controller.signal,
    headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: PROMPT, max_tokens: 240, n: 2, temperature: 0 }),
  }).then(() => null, (e) => e);
  // Leave once the engine holds the request's KV, long before its 2 x 240 tokens are done.
  let m;
  for (let tries = 0; ; tries++) {
    m = (await metrics()).values;
    if (m.kvforge_kv_blocks_used > 0) break;
    assert.ok(tries < 5000, 'the request never took KV');
    await new Promise((r) => setTimeout(r, 1));
  }
  controller.abort();
  const err = await pending;
  assert.equal(err?.name, 'AbortError', 'the client left before any answer');
  for (let tries = 0; tries < 100; tries++) {
    m = (await metrics()).values;
    if (m.kvforge_kv_blocks_used === 0 && m.kvforge_requests_in_flight === 0 && m[key499]) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const delta = (k) => (m[k] ?? 0) - (before[k] ?? 0);
  const seen = `(${delta('kvforge_generation_tokens_total')} tokens generated, ` +
    `${delta('kvforge_requests_total{endpoint="/v1/completions",status="200"}')} answered 200)`;
  assert.equal(m.kvforge_kv_blocks_used, 0, 'KV fully free');
  assert.equal(m.kvforge_kv_blocks_free, m.kvforge_kv_blocks_total);
  assert.equal(m.kvforge_requests_in_flight, 0);
  assert.equal(delta('kvforge_client_disconnects_total'), 1, `aborted as a disconnect ${seen}`);
  assert.equal(delta(key499), 1, `answered 499 (client closed request) ${seen}`);
  assert.ok(delta('kvforge_generation_tokens_total') < 480,
            `aborted mid-generation (${delta('kvforge_generation_tokens_total')} of 480 tokens)`);
});
