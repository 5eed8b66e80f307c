// The routes beyond chat and completions that apps already speak (issue 41):
// CORS (--cors-origin), /v1/models/{id} and model_not_found, --alias with
// several ids, --any-model-name, llama-server's /tokenize, /detokenize and
// /props, and the access log's 499 for a stream the client cut. Run by
// run_server_tests.sh (CTest: server_routes).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, stopServer } from './serve_process.mjs';

const KEY = 'k-41';
const ORIGIN = 'https://app.example';
const STEM = 'kvforge-kjv-4m';
const TEXT = 'In the beginning';
let cors;   // --cors-origin, --api-key, two aliases
let plain;  // no CORS, --any-model-name

before(async () => {
  cors = await startServer(['--cors-origin', ORIGIN, '--api-key', KEY,
                            '--alias', 'gpt-4o-mini,local', '--max-seqs', '4']);
  cors.base = `http://127.0.0.1:${cors.port}`;
  plain = await startServer(['--any-model-name', '--max-seqs', '4']);
  plain.base = `http://127.0.0.1:${plain.port}`;
});

after(async () => {
  await stopServer(cors.proc);
  await stopServer(plain.proc);
});

const auth = { Authorization: `Bearer ${KEY}` };
const post = (base, path, body, headers = {}) => fetch(`${base}${path}`, {
  method: 'POST', headers: { 'Content-Type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

test('CORS: a preflight is answered without the key; every answer names the origin', async () => {
  const pre = await fetch(`${cors.base}/v1/chat/completions`, {
    method: 'OPTIONS',
    headers: { Origin: ORIGIN, 'Access-Control-Request-Method': 'POST',
               'Access-Control-Request-Headers': 'authorization,content-type' },
  });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers.get('access-control-allow-origin'), ORIGIN);
  assert.match(pre.headers.get('access-control-allow-methods'), /POST/);
  assert.equal(pre.headers.get('access-control-allow-headers'), 'authorization,content-type');
  // On a route that does not exist too: the browser asks before it knows.
  assert.equal((await fetch(`${cors.base}/v2/none`, { method: 'OPTIONS' })).status, 204);
  const ok = await post(cors.base, '/v1/completions', { prompt: TEXT, max_tokens: 2 }, auth);
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get('access-control-allow-origin'), ORIGIN);
  const refused = await post(cors.base, '/v1/completions', { prompt: TEXT });
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get('access-control-allow-origin'), ORIGIN);
  const lost = await fetch(`${cors.base}/v2/none`);
  assert.equal(lost.status, 404);
  assert.equal(lost.headers.get('access-control-allow-origin'), ORIGIN);
});

test('CORS: none without --cors-origin; OPTIONS is then an unknown route', async () => {
  const pre = await fetch(`${plain.base}/v1/chat/completions`, { method: 'OPTIONS' });
  assert.equal(pre.status, 404);
  assert.equal(pre.headers.get('access-control-allow-origin'), null);
  const r = await fetch(`${plain.base}/v1/models`);
  assert.equal(r.status, 200);
  for (const name of r.headers.keys()) assert.ok(!name.startsWith('access-control-'), name);
});

test('models: several aliases, /v1/models/{id}, unknown model 404 model_not_found', async () => {
  const client = new OpenAI({ apiKey: KEY, baseURL: `${cors.base}/v1`, maxRetries: 0 });
  const list = await client.models.list();
  assert.deepEqual(list.data.map((m) => m.id), ['gpt-4o-mini', 'local']);
  for (const id of ['gpt-4o-mini', 'local', STEM]) {
    const m = await client.models.retrieve(id);
    assert.equal(m.id, id);
    assert.equal(m.object, 'model');
  }
  await assert.rejects(client.models.retrieve('gpt-4'),
                       (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
  await assert.rejects(
    client.chat.completions.create({ model: 'gpt-4', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found' && e.param === 'model');
  const chat = await client.chat.completions.create(
    { model: 'local', messages: [{ role: 'user', content: 'x' }], max_tokens: 2 });
  assert.equal(chat.model, 'local');
});

test('--any-model-name: a hard-coded model id is served and echoed', async () => {
  const client = new OpenAI({ apiKey: 'unused', baseURL: `${plain.base}/v1`, maxRetries: 0 });
  const r = await client.chat.completions.create(
    { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], max_tokens: 2 });
  assert.equal(r.model, 'gpt-4o');
  assert.equal((await client.models.retrieve('claude-3')).id, 'claude-3');
  assert.deepEqual((await client.models.list()).data.map((m) => m.id), [STEM]);
});

test('llama-server /tokenize, /detokenize, /props', async () => {
  const base = plain.base;
  const tok = await (await post(base, '/tokenize', { content: TEXT, add_special: true })).json();
  // The same tokens the completions route prefills (BOS included).
  const done = await (await post(base, '/v1/completions', { prompt: TEXT, max_tokens: 1 })).json();
  assert.equal(tok.tokens.length, done.usage.prompt_tokens);
  const bare = await (await post(base, '/tokenize', { content: TEXT })).json();
  assert.deepEqual(bare.tokens, tok.tokens.slice(1), 'add_special adds only BOS');
  const pieces = await (await post(base, '/tokenize', { content: TEXT, with_pieces: true })).json();
  assert.deepEqual(pieces.tokens.map((t) => t.id), bare.tokens);
  const detok = await (await post(base, '/detokenize', { tokens: bare.tokens })).json();
  assert.equal(detok.content, pieces.tokens.map((t) => t.piece).join(''));
  assert.equal(detok.content.trim(), TEXT);
  assert.deepEqual(await (await post(base, '/tokenize', {})).json(), { tokens: [] });

  for (const [path, body, message] of [
    ['/tokenize', { content: 5 }, "'content' must be a string"],
    ['/tokenize', { content: 'x', with_pieces: 'yes' }, "'with_pieces' must be a boolean"],
    ['/detokenize', { tokens: [1, -1] }, "'tokens' must hold token ids"],
    ['/detokenize', { tokens: 'x' }, "'tokens' must be an array"],
  ]) {
    const r = await post(base, path, body);
    assert.equal(r.status, 400, path);
    assert.ok((await r.json()).error.message.includes(message), message);
  }
  const props = await (await fetch(`${base}/props`)).json();
  assert.equal(props.total_slots, 4);
  assert.equal(props.default_generation_settings.n_ctx, 256);
  assert.match(props.model_path, /kvforge-kjv-4m\.gguf$/);
  assert.equal(typeof props.chat_template, 'string');
  assert.equal(props.bos_token, '<s>');
  // Behind the key like the API.
  assert.equal((await fetch(`${cors.base}/props`)).status, 401);
});

test('llama-server /slots: the running request while it streams, idle after', async () => {
  const base = plain.base;
  const idle = await (await fetch(`${base}/slots`)).json();
  assert.equal(idle.length, 4);  // --max-seqs 4
  assert.ok(idle.every((s, i) => s.id === i && !s.is_processing && s.id_task === -1));
  const res = await post(base, '/v1/completions', { prompt: TEXT, max_tokens: 200, stream: true,
                                                    temperature: 0, ignore_eos: true });
  const reader = res.body.getReader();
  let seen = '';
  while ((seen.match(/data: \{/g) ?? []).length < 3) seen += new TextDecoder().decode((await reader.read()).value);
  const busy = await (await fetch(`${base}/slots`)).json();
  const running = busy.filter((s) => s.is_processing);
  assert.equal(running.length, 1, JSON.stringify(busy));
  assert.equal(running[0].id, 0);
  assert.equal(running[0].n_ctx, 256);
  const tokens = (await (await post(base, '/tokenize', { content: TEXT, add_special: true })).json()).tokens;
  assert.equal(running[0].n_prompt_tokens, tokens.length);
  assert.ok(running[0].next_token.n_decoded >= 3, JSON.stringify(running[0]));
  while (!(await reader.read()).done);
  const after = await (await fetch(`${base}/slots`)).json();
  assert.ok(after.every((s) => !s.is_processing));
  assert.equal((await (await fetch(`${base}/props`)).json()).endpoint_slots, true);
  assert.equal((await fetch(`${cors.base}/slots`)).status, 401);
});

test('llama-server slot actions: erase an idle slot, refusals naming why', async () => {
  const base = plain.base;
  const act = async (id, action, body) => {
    const res = await post(base, `/slots/${id}?action=${action}`, body ?? {});
    return { status: res.status, body: await res.json() };
  };
  assert.deepEqual(await act(2, 'erase'), { status: 200, body: { id_slot: 2, n_erased: 0 } });
  // save and restore: no KV is kept per slot (paged: a shared prefix cache).
  for (const action of ['save', 'restore']) {
    const r = await act(0, action, { filename: 'conversation.bin' });
    assert.equal(r.status, 501, JSON.stringify(r));
    assert.equal(r.body.error.type, 'not_supported_error');
    assert.match(r.body.error.message, /no KV per slot/);
    assert.equal((await act(0, action, { filename: '../etc/passwd' })).status, 400);
    assert.equal((await act(0, action, {})).status, 400);
  }
  for (const [id, action, pattern] of [['x', 'erase', /Invalid slot ID/], [4, 'erase', /Invalid slot ID/],
                                       ['-1', 'erase', /Invalid slot ID/], [0, 'shred', /Invalid action/]]) {
    const r = await act(id, action);
    assert.equal(r.status, 400, JSON.stringify(r));
    assert.match(r.body.error.message, pattern);
  }
  // A slot processing a request is not erased under it.
  const res = await post(base, '/v1/completions', { prompt: TEXT, max_tokens: 200, stream: true,
                                                    temperature: 0, ignore_eos: true });
  const reader = res.body.getReader();
  await reader.read();
  const busy = await act(0, 'erase');
  assert.equal(busy.status, 409, JSON.stringify(busy));
  assert.match(busy.body.error.message, /processing request/);
  while (!(await reader.read()).done);  // read to the end: a cut stream would be logged 499
  const denied = await fetch(`${cors.base}/slots/0?action=erase`, { method: 'POST' });
  assert.equal(denied.status, 401);
});

test('a stream the client cuts is logged 499, a finished one 200', async () => {
  const client = new OpenAI({ apiKey: 'unused', baseURL: `${plain.base}/v1`, maxRetries: 0 });
  const controller = new AbortController();
  // Raw text from this model runs on: 240 tokens, far more than read before the abort
  // (a chat answer may end on its own first, under load before the abort is sent).
  const stream = await client.completions.create(
    { prompt: TEXT, max_tokens: 240, temperature: 0, stream: true },
    { signal: controller.signal });
  let n = 0;
  let finish = null;
  try {
    for await (const chunk of stream) {
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (++n === 3) controller.abort();
    }
  } catch (e) {
    if (!(e instanceof OpenAI.APIUserAbortError) && e.name !== 'AbortError') throw e;
  }
  assert.equal(finish, null, `cut before the end (${n} chunks read)`);
  const whole = await client.completions.create(
    { prompt: TEXT, max_tokens: 3, stream: true });
  for await (const chunk of whole) assert.ok(chunk);
  const line = (status) => new RegExp(`"POST /v1/completions" ${status} `);
  for (let tries = 0; tries < 100 && !line(499).test(plain.log()); tries++)
    await new Promise((r) => setTimeout(r, 50));
  // Only the cut stream: the finished one, after it, is not counted 499.
  await new Promise((r) => setTimeout(r, 200));
  const cut = plain.log().split('\n').filter((l) => line(499).test(l));
  assert.equal(cut.length, 1, plain.log());
});
