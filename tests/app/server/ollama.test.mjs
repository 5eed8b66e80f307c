// Ollama's API on `kvforge serve` (issue 41), driven by the `ollama` npm
// client: version, list, show, chat and generate (streaming and not), with
// greedy output checked against the OpenAI routes on the same server, and
// Ollama's error shape, which the client turns into a readable message.
// Run by run_server_tests.sh (CTest: server_routes).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Ollama } from 'ollama';
import { startServer, stopServer } from './serve_process.mjs';

const MODEL = 'kvforge-kjv-4m';
const PROMPT = 'In the beginning';
const GREEDY = { temperature: 0, num_predict: 12, num_ctx: 4096 };  // num_ctx: accepted, ignored
let server;
let base;
let ollama;

before(async () => {
  server = await startServer(['--max-seqs', '4']);
  base = `http://127.0.0.1:${server.port}`;
  ollama = new Ollama({ host: base });
});

after(async () => { await stopServer(server.proc); });

const openai = async (path, body) => (await fetch(`${base}${path}`, {
  method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
})).json();

test('version, list and show', async () => {
  assert.match((await ollama.version()).version, /^\d+\.\d+\.\d+$/);
  const list = await ollama.list();
  assert.deepEqual(list.models.map((m) => m.name), [`${MODEL}:latest`]);
  assert.ok(list.models[0].size > 0);
  // The default model: llama, 4,196,608 parameters (kvforge info), general.file_type 1 (F16).
  const details = { format: 'gguf', family: 'llama', families: ['llama'], parent_model: '',
                    parameter_size: '4.2M', quantization_level: 'F16' };
  assert.deepEqual(list.models[0].details, details);
  const show = await ollama.show({ model: `${MODEL}:latest` });
  assert.deepEqual(show.details, details);
  assert.equal(typeof show.template, 'string');
  assert.equal(show.model_info['general.context_length'], 256);
  assert.equal(show.model_info['llama.context_length'], 256);
  assert.equal(show.model_info['general.architecture'], 'llama');
  assert.ok(show.model_info['general.parameter_count'] > 4.1e6, show.model_info);
  assert.deepEqual(show.capabilities, ['completion', 'tools']);
  const ps = await ollama.ps();
  assert.deepEqual(ps.models.map((m) => m.name), [`${MODEL}:latest`]);
  assert.ok(Date.parse(ps.models[0].expires_at) > Date.now());
  await assert.rejects(ollama.show({ model: 'llama3' }),
                       (e) => e.status_code === 404 && e.message.includes("'llama3' does not exist"));
});

test('chat: greedy text equals /v1/chat/completions, streaming and not', async () => {
  const messages = [{ role: 'user', content: 'Tell of the flood' }];
  const ref = await openai('/v1/chat/completions',
                           { messages, max_tokens: GREEDY.num_predict, temperature: 0 });
  const expected = ref.choices[0].message.content;
  const whole = await ollama.chat({ model: MODEL, messages, stream: false, options: GREEDY });
  assert.equal(whole.message.role, 'assistant');
  assert.equal(whole.message.content, expected);
  assert.equal(whole.done, true);
  assert.equal(whole.done_reason, ref.choices[0].finish_reason === 'length' ? 'length' : 'stop');
  assert.equal(whole.prompt_eval_count, ref.usage.prompt_tokens);
  assert.equal(whole.eval_count, ref.usage.completion_tokens);
  let text = '';
  let last;
  for await (const part of await ollama.chat({ model: MODEL, messages, stream: true, options: GREEDY })) {
    text += part.message.content;
    last = part;
  }
  assert.equal(text, expected);
  assert.equal(last.done, true);
  assert.equal(last.eval_count, ref.usage.completion_tokens);
  assert.ok(last.prompt_eval_duration > 0 && last.prompt_eval_duration <= last.total_duration);
});

test('generate: raw equals /v1/completions; templated equals a one-message chat', async () => {
  const ref = await openai('/v1/completions',
                           { prompt: PROMPT, max_tokens: GREEDY.num_predict, temperature: 0 });
  const raw = await ollama.generate({ model: MODEL, prompt: PROMPT, raw: true, stream: false, options: GREEDY });
  assert.equal(raw.response, ref.choices[0].text);
  let streamed = '';
  for await (const part of await ollama.generate({ model: MODEL, prompt: PROMPT, raw: true, stream: true, options: GREEDY }))
    streamed += part.response;
  assert.equal(streamed, ref.choices[0].text);
  const chat = await openai('/v1/chat/completions', {
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: PROMPT }],
    max_tokens: GREEDY.num_predict, temperature: 0 });
  const templated = await ollama.generate({ model: MODEL, system: 'Be brief.', prompt: PROMPT, stream: false, options: GREEDY });
  assert.equal(templated.response, chat.choices[0].message.content);
  const load = await ollama.generate({ model: MODEL, prompt: '', stream: false });
  assert.equal(load.done_reason, 'load');
});

test('format: "json" and a schema constrain chat and generate through the grammar', async () => {
  const schema = { type: 'object', properties: { name: { type: 'string', maxLength: 10 } },
                   required: ['name'], additionalProperties: false };
  const chat = await ollama.chat({ model: MODEL, messages: [{ role: 'user', content: 'Name a king' }],
                                   format: schema, stream: false, options: { num_predict: 40, temperature: 0 } });
  assert.deepEqual(Object.keys(JSON.parse(chat.message.content)), ['name']);
  let streamed = '';
  for await (const part of await ollama.generate({ model: MODEL, prompt: 'Name a king', format: 'json',
                                                   stream: true, options: { num_predict: 200, seed: 1 } }))
    streamed += part.response;
  assert.equal(typeof JSON.parse(streamed), 'object');
});

test('errors in Ollama\'s shape, readable through the client', async () => {
  const cases = [
    [{ model: MODEL, messages: [{ role: 'user', content: 'x' }], options: { mirostat: 2 } }, 400, "'options.mirostat' is not supported"],
    [{ model: MODEL, messages: [{ role: 'user', content: 'x' }], format: 'yaml' }, 400, "'format' must be \"json\" or a JSON schema"],
    [{ model: MODEL, messages: [{ role: 'user', content: 'x' }], format: { type: 'object', properties: 5 } }, 400, 'properties'],
    [{ model: MODEL, messages: [{ role: 'user', content: 'x', images: ['aGk='] }] }, 400, "'images' is not supported"],
    [{ model: 'llama3', messages: [{ role: 'user', content: 'x' }] }, 404, "'llama3' does not exist"],
    [{ model: MODEL, messages: [{ role: 'king', content: 'x' }] }, 400, "got 'king'"],
  ];
  for (const [body, status, message] of cases) {
    for (const stream of [false, true]) {
      await assert.rejects(async () => {
        const r = await ollama.chat({ ...body, stream });
        if (stream) for await (const part of r) assert.ok(part);
      }, (e) => e.status_code === status && e.message.includes(message),
      `${message} (stream ${stream})`);
    }
  }
  const r = await fetch(`${base}/api/generate`, { method: 'POST', body: '{"model": 3}' });
  assert.equal(r.status, 400);
  assert.deepEqual(Object.keys(await r.json()), ['error']);
});

test('a stream the client aborts is cancelled: logged 499, its KV freed', async () => {
  // Raw text from this model runs on: 240 tokens, far more than read before the abort.
  const stream = await ollama.generate({ model: MODEL, prompt: PROMPT, raw: true, stream: true,
                                         options: { num_predict: 240, temperature: 0 } });
  let n = 0;
  let last;
  try {
    for await (const part of stream) {
      last = part;
      if (++n === 3) stream.abort();
    }
  } catch (e) {
    if (e.name !== 'AbortError') throw e;
  }
  assert.ok(n >= 3 && !last.done, `aborted before the end (${n} parts read)`);
  const gauge = (text, name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)[1]);
  let m;
  for (let tries = 0; tries < 100; tries++) {
    m = await (await fetch(`${base}/metrics`)).text();
    // The access log's 499, the freed blocks and the in-flight gauge are
    // three updates a scrape may see one at a time: wait for all of them.
    if (/"POST \/api\/generate" 499 /.test(server.log()) && gauge(m, 'kvforge_kv_blocks_used') === 0 &&
        gauge(m, 'kvforge_requests_in_flight') === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.match(server.log(), /"POST \/api\/generate" 499 /);
  assert.equal(gauge(m, 'kvforge_kv_blocks_used'), 0);
  assert.equal(gauge(m, 'kvforge_requests_in_flight'), 0);
});
