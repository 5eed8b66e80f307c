// Hostile clients and hostile model files against `kvforge serve` (issue 25):
// every template bomb, a template's own errors, numbers beyond a double,
// reserved template variables, 32 concurrent 7 MB prompts, 1,000 slow
// connections, a connection cap, requests dribbled in past their read
// deadlines, clients that leave mid-generation or mid-render, a second server
// on a used port, /metrics behind the API key, and SIGTERM in the middle of it
// all; and the routes of issue 41 (Responses, Messages, embeddings, Ollama's,
// llama-server's): every field of the wrong type, oversized inputs, unknown ids,
// and 10,000 stored responses. Each bad request is a 4xx within 2 s, the server
// stays up, and its peak RSS stays under 1 GiB.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import http from 'node:http';

const BIN = process.env.KVFORGE_BIN;
const MODEL_PATH = process.env.KVFORGE_MODEL;
const API_KEY = 'hostile-key';
const AUTH = { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' };
const GiB = 1 << 30;
// Under AddressSanitizer or ThreadSanitizer (run_server_tests.sh sets this) the server is
// several times slower and its memory holds the sanitizers' shadow and quarantine: the time
// limits are scaled, the RSS limits not checked, and fewer slow connections are opened.
const SANITIZED = process.env.KVFORGE_SANITIZED === '1';
const SLOW = SANITIZED ? 5 : 1;
const RSS_LIMIT = SANITIZED ? Infinity : GiB;
const SLOW_CONNECTIONS = SANITIZED ? 200 : 1000;
// A sanitized server prepares a 7 MB body in about a second, one at a time (the 8 MiB gate),
// and in 2.3 s under ThreadSanitizer beside a 2-thread busy loop: 16 of them then queued past
// the gate's 30 s wait (a 503 by design), and 8 did on a loaded machine. Four still meet at the
// gate there.
const TSAN = process.env.KVFORGE_TSAN === '1';
const BIG_PROMPTS = TSAN ? 4 : SANITIZED ? 8 : 32;
// Under ThreadSanitizer the suite is there for the server's threads; the bombs that one request
// thread parses or renders alone (templates, API bodies, huge JSON) run in the release and ASan
// builds, where they take a fraction of the time.
const ONE_THREAD_BOMB = TSAN &&
  'a bomb one request thread parses alone: run in the release and ASan builds';
const dir = mkdtempSync(join(tmpdir(), 'kvforge-hostile-'));

// The bombs of issues 25 and 42, each set off by the last message's content, so
// that the template passes its load-time test render.
const BOMBS = {
  'bomb-repeat': "{% set x = ['a' * 1000000] * 1000000 %}",
  'bomb-membership': '{% set xs = range(100000) | list %}{% for i in range(100000) %}' +
      '{% if -1 in xs %}{% endif %}{% endfor %}',
  'bomb-first': "{% set s = 'ab' * 500000 %}{% for i in range(100000) %}" +
      "{% if s | first == 'b' %}{% endif %}{% endfor %}",
  'bomb-unique': '{% set ns = namespace(v=[]) %}{% for i in range(100000) %}' +
      '{% set ns.v = ns.v + [[i]] %}{% endfor %}{{ ns.v | unique | length }}',
  'bomb-dag': "{% set ns = namespace(a=['x']) %}{% for i in range(60) %}" +
      '{% set ns.a = [ns.a, ns.a] %}{% endfor %}{{ ns.a }}',
  'bomb-dag-escapes': "{% set ns = namespace(a=['\\x02' * 30]) %}{% for i in range(60) %}" +
      '{% set ns.a = [ns.a, ns.a] %}{% endfor %}{{ ns.a }}',
  'bomb-search': "{% set h = 'a' * 1000000 %}{% set n = 'a' * 500000 ~ 'b' %}" +
      '{% for i in range(100000) %}{{ n in h }}{% endfor %}',
  'bomb-loops': '{% set r = range(3000) | list %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}',
};
// What a bomb may cost: CPU seconds of the server (not the wall clock, which
// also counts other processes' turns on a busy machine). The budget stops
// every bomb in a small fraction of this.
const BOMB_CPU_SECONDS = 2 * SLOW;
// A template's own errors on what a request gave it: a 400 naming the problem, never a 500.
const TEMPLATE_ERRORS = {
  'error-raise': ["{{ raise_exception('no ' ~ last ~ ' here') }}", /no error-raise here/],
  'error-type': ['{{ 1 + last }}', /line \d+: unsupported operand types for \+: int and str/],
  'error-method': ['{{ last.shout() }}', /line \d+: unsupported string method 'shout'/],
  'error-kwarg': ['{{ volume.upper() }}', /line \d+: .*'upper'/],
  'error-undefined': ['{{ messages[7].content }}', /line \d+: '\[7\]' is undefined/],
  'error-argument': ['{{ range(1, 2, 0) }}', /line \d+: range\(\): range\(\) step must not be zero/],
  // Each call 60 blocks deeper: the renderer's depth bound (1,024 levels) before 32 calls.
  'error-depth': ['{% macro f(n) %}' + '{% if true %}'.repeat(60) + '{{ f(n + 1) }}' +
                  '{% endif %}'.repeat(60) + '{% endmacro %}{{ f(0) }}',
                  /line \d+: template evaluation nests deeper than 1024 levels/],
};
// Within the budget, and long enough that the render looks at its client many times.
const SLOW_RENDER = '{% set r = range(500) | list %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}';
// A trigger is short: a long message (the 7 MB prompts) is not copied once per trigger
// (each copy is charged to the render's memory budget).
let template = "{%- set last = messages[-1].content if messages[-1].content | length < 64 else '' -%}\n";
const triggers = { ...BOMBS, 'slow-render': SLOW_RENDER };
for (const [name, [source]] of Object.entries(TEMPLATE_ERRORS)) triggers[name] = source;
for (const [name, bomb] of Object.entries(triggers)) template += `{%- if last == '${name}' %}${bomb}{% endif -%}\n`;
template += "{%- for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}" +
    '{%- if add_generation_prompt %}assistant:{% endif -%}';
const TEMPLATE_FILE = join(dir, 'bombs.jinja');
writeFileSync(TEMPLATE_FILE, template);

function spawnServer(args) {
  const model = args.includes('-m') ? [] : ['-m', MODEL_PATH];
  const proc = spawn(BIN, ['serve', ...model, '-t', '2', ...args],
                     { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stdout.on('data', (d) => { log += d; });
  proc.stderr.on('data', (d) => { log += d; });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return { proc, log: () => log, exited };
}

async function startServer(args) {
  const s = spawnServer(['--port', '0', ...args]);
  s.port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start:\n' + s.log())), 60000);
    const look = () => {
      const m = /listening on http:\/\/[\d.]+:(\d+)/.exec(s.log());
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    };
    s.proc.stderr.on('data', look);
    s.exited.then(({ code }) => reject(new Error(`server exited (${code}):\n` + s.log())));
  });
  s.base = `http://127.0.0.1:${s.port}`;
  return s;
}

// Peak resident memory of a process (VmHWM), in bytes.
function peakRss(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]) * 1024;
}

async function post(base, path, body, headers = AUTH) {
  const t0 = performance.now();
  const res = await fetch(`${base}${path}`, { method: 'POST', headers, body });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: res.status, json, text, seconds: (performance.now() - t0) / 1000 };
}

async function get(base, path, headers = AUTH) {
  const t0 = performance.now();
  const res = await fetch(`${base}${path}`, { headers });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: res.status, json, text, seconds: (performance.now() - t0) / 1000 };
}

async function healthy(base) {
  const t0 = performance.now();
  const res = await fetch(`${base}/health`);
  await res.text();
  return { ok: res.status === 200, seconds: (performance.now() - t0) / 1000 };
}

const chat = (content, extra = {}) => JSON.stringify({ messages: [{ role: 'user', content }], max_tokens: 4, ...extra });

let main;
before(async () => {
  main = await startServer(['--api-key', API_KEY, '--chat-template', TEMPLATE_FILE]);
});

after(async () => {
  if (main && main.proc.exitCode === null) {
    main.proc.kill('SIGKILL');
    await main.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

test('every template bomb is a 400 stopped by the budget; the server stays up', { skip: ONE_THREAD_BOMB }, async () => {
  for (const name of Object.keys(BOMBS)) {
    const cpu0 = cpuSeconds(main.proc.pid);
    const r = await post(main.base, '/v1/chat/completions', chat(name));
    const cpu = cpuSeconds(main.proc.pid) - cpu0;
    assert.equal(r.status, 400, `${name}: ${r.text}`);
    assert.match(r.json.error.message, /went over its budget.*exceeded its (work|memory) budget/, name);
    assert.ok(cpu < BOMB_CPU_SECONDS, `${name} took ${cpu.toFixed(2)} s of CPU`);
    console.log(`# ${name}: 400 after ${cpu.toFixed(2)} s of CPU, ${r.seconds.toFixed(2)} s wall`);
  }
  const ok = await post(main.base, '/v1/chat/completions', chat('hello'));
  assert.equal(ok.status, 200, ok.text);
  assert.ok((await healthy(main.base)).ok);
  assert.ok(peakRss(main.proc.pid) < RSS_LIMIT);
});

test("a template's own error on a request is a 400 naming it, not a 500", async () => {
  for (const [name, [, message]] of Object.entries(TEMPLATE_ERRORS)) {
    const extra = name === 'error-kwarg' ? { chat_template_kwargs: { volume: 11 } } : {};
    const r = await post(main.base, '/v1/chat/completions', chat(name, extra));
    assert.equal(r.status, 400, `${name}: ${r.text}`);
    assert.equal(r.json.error.type, 'invalid_request_error', name);
    assert.equal(r.json.error.param, 'messages', name);
    assert.match(r.json.error.message, message, name);
    assert.ok(r.seconds < 2 * SLOW, `${name} took ${r.seconds.toFixed(2)} s`);
    console.log(`# ${name}: 400 ${r.json.error.message}`);
  }
  assert.ok((await healthy(main.base)).ok);
});

test('a template that blows its budget at load is refused, naming the file', async () => {
  const file = join(dir, 'load-bomb.jinja');
  writeFileSync(file, BOMBS['bomb-repeat'] + '{{ messages[0].content }}');
  const s = spawnServer(['--port', '0', '--chat-template', file]);
  const { code } = await s.exited;
  assert.notEqual(code, 0);
  assert.ok(s.log().includes(file), s.log());
  assert.match(s.log(), /budget/);
});

// A copy of the GGUF at `path` with `key` = `value` (a string) added to its
// metadata: the KV section grows, tensor infos and data are copied, the data
// re-aligned (tensor offsets are relative to the data section).
function ggufWithString(path, key, value) {
  const buf = readFileSync(path);
  let pos = 4 + 4;
  const nTensors = buf.readBigUInt64LE(pos); pos += 8;
  const nKv = buf.readBigUInt64LE(pos); pos += 8;
  const kvStart = pos;
  const SIZES = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  let alignment = 32;
  const str = () => { const n = Number(buf.readBigUInt64LE(pos)); pos += 8; const s = buf.toString('utf8', pos, pos + n); pos += n; return s; };
  const skip = (type) => {
    if (type === 8) { str(); return; }
    if (type === 9) {
      const t = buf.readUInt32LE(pos); pos += 4;
      const n = Number(buf.readBigUInt64LE(pos)); pos += 8;
      for (let i = 0; i < n; ++i) skip(t);
      return;
    }
    pos += SIZES[type];
  };
  for (let i = 0n; i < nKv; ++i) {
    const k = str();
    const type = buf.readUInt32LE(pos); pos += 4;
    if (k === 'general.alignment') alignment = buf.readUInt32LE(pos);
    skip(type);
  }
  const kvEnd = pos;
  for (let i = 0n; i < nTensors; ++i) {
    str();
    const dims = buf.readUInt32LE(pos); pos += 4 + 8 * dims + 4 + 8;
  }
  const infosEnd = pos;
  const dataStart = Math.ceil(infosEnd / alignment) * alignment;
  const enc = (s) => { const b = Buffer.from(s, 'utf8'); const n = Buffer.alloc(8); n.writeBigUInt64LE(BigInt(b.length)); return Buffer.concat([n, b]); };
  const type = Buffer.alloc(4); type.writeUInt32LE(8);
  const header = Buffer.from(buf.subarray(0, kvStart));
  header.writeBigUInt64LE(nKv + 1n, 16);
  const head = Buffer.concat([header, buf.subarray(kvStart, kvEnd), enc(key), type, enc(value),
                              buf.subarray(kvEnd, infosEnd)]);
  const pad = Buffer.alloc((alignment - (head.length % alignment)) % alignment);
  return Buffer.concat([head, pad, buf.subarray(dataStart)]);
}

test('a GGUF whose chat template blows its budget at load is refused, naming the file', async () => {
  const file = join(dir, 'bomb-template.gguf');
  writeFileSync(file, ggufWithString(MODEL_PATH, 'tokenizer.chat_template',
                                     BOMBS['bomb-dag'] + '{{ messages[0].content }}'));
  const s = spawnServer(['--port', '0', '-m', file]);
  const { code } = await s.exited;
  assert.notEqual(code, 0, s.log());
  assert.ok(s.log().includes(file), s.log());
  assert.match(s.log(), /tokenizer\.chat_template.*budget/s);
});

// Issue 42: a chain of 30,000 attribute lookups in a branch that only a last
// message of 'BOOM' takes. It passed the load-time test render, and the
// request that took the branch overflowed the stack (SIGSEGV, connection
// reset). Now the parser refuses it at load, naming the limit.
const DEEP_CHAIN = "{% if messages[-1].content == 'BOOM' %}{{ messages" + '.a'.repeat(30000) +
    ' }}{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}';

// Waits for `s` to exit or to listen; a server that listens is sent `content` as a
// chat message, and the outcome is the assertion's message.
async function refusedAtLoad(s, content) {
  const listening = new Promise((resolve) => {
    const look = () => { if (/listening on http:\/\/[\d.]+:(\d+)/.test(s.log())) resolve(true); };
    s.proc.stderr.on('data', look);
  });
  const outcome = await Promise.race([s.exited, listening]);
  if (outcome !== true) return outcome;
  const port = Number(/listening on http:\/\/[\d.]+:(\d+)/.exec(s.log())[1]);
  const r = await post(`http://127.0.0.1:${port}`, '/v1/chat/completions', chat(content))
      .catch((e) => ({ status: `no answer (${e.cause?.code ?? e.message})` }));
  s.proc.kill('SIGKILL');
  const { signal } = await s.exited;
  assert.fail(`the server accepted the template; a '${content}' request got ${r.status}, ` +
              `then the server ended with ${signal}`);
}

test('a template nesting 30,000 levels deep is refused at load, naming the limit', async () => {
  const file = join(dir, 'deep-chain.jinja');
  writeFileSync(file, DEEP_CHAIN);
  const s = spawnServer(['--port', '0', '--chat-template', file]);
  const { code } = await refusedAtLoad(s, 'BOOM');
  assert.notEqual(code, 0);
  assert.ok(s.log().includes(file), s.log());
  assert.match(s.log(), /line 1: expression nests deeper than 128 levels/);
  assert.ok((await healthy(main.base)).ok);
});

test("a GGUF's tokenizer.chat_template nesting 30,000 levels deep is refused at load", async () => {
  const file = join(dir, 'deep-chain.gguf');
  writeFileSync(file, ggufWithString(MODEL_PATH, 'tokenizer.chat_template', DEEP_CHAIN));
  const s = spawnServer(['--port', '0', '-m', file]);
  const { code } = await refusedAtLoad(s, 'BOOM');
  assert.notEqual(code, 0, s.log());
  assert.match(s.log(), /tokenizer\.chat_template.*expression nests deeper than 128 levels/s);
});

test('numbers beyond a double and malformed bodies are 400s', async () => {
  const bodies = ['{"prompt":"a","temperature":1e309}', '{"prompt":"a","unknown":1e400}',
                  '{"prompt":"a","max_tokens":-1e999}', '{"prompt":"a",', '{"prompt":"\\ud800"}',
                  '[]', '', '{"prompt":"a"}}'];
  for (const body of bodies) {
    const r = await post(main.base, '/v1/completions', body);
    assert.equal(r.status, 400, `${body}: ${r.text}`);
    assert.equal(typeof r.json?.error?.message, 'string', body);
    assert.ok(r.seconds < 2 * SLOW, `${body} took ${r.seconds.toFixed(2)} s`);
  }
});

// The API families beyond chat and completions (issue 41): wrong types, oversized
// inputs, unknown fields and unknown models are 4xx within 2 s, in the route's error shape.
const MODEL_ID = MODEL_PATH.split('/').pop().replace(/\.gguf$/, '');
const FAMILY_CASES = [
  ['/v1/embeddings', { model: MODEL_ID, input: 7 }, 400],
  ['/v1/embeddings', { model: MODEL_ID, input: Array(3000).fill('a') }, 400],
  ['/v1/embeddings', { model: MODEL_ID, input: 'and the earth '.repeat(500000) }, 400],
  ['/v1/embeddings', { model: MODEL_ID, input: [[1, 2.5]] }, 400],
  ['/v1/embeddings', { model: MODEL_ID, input: [[2 ** 40]] }, 400],
  ['/v1/embeddings', { model: MODEL_ID, input: 'x', dimensions: '8' }, 400],
  ['/v1/embeddings', { model: 'nope', input: 'x' }, 404],
  ['/api/embed', { model: MODEL_ID, input: [1, 2] }, 400],
  ['/api/embed', { model: MODEL_ID, input: 'x', truncate: 'no' }, 400],
  ['/api/embed', { model: MODEL_ID, input: 'and the earth '.repeat(500000), truncate: false }, 400],
  ['/api/embeddings', { model: MODEL_ID, prompt: ['x'] }, 400],
  ['/v1/responses', { model: MODEL_ID, input: 'and the earth '.repeat(500000) }, 400],
  ['/v1/responses', { model: MODEL_ID, input: [{ role: 'user', content: 5 }] }, 400],
  ['/v1/responses', { model: MODEL_ID, input: 'x', previous_response_id: 'resp_x' }, 400],
  ['/v1/responses', { model: MODEL_ID, input: 'x', previous_response_id: ['resp_x'] }, 400],
  ['/v1/responses', { model: MODEL_ID, input: 'x', previous_response_id: 'r'.repeat(100000) }, 400],
  ['/v1/responses', { model: MODEL_ID, input: 'x', store: 'yes' }, 400],
  ['/v1/responses', { model: MODEL_ID, input: 'x', max_output_tokens: 1e12 }, 400],
  ['/v1/responses', { model: MODEL_ID, input: Array(5000).fill({ role: 'user', content: 'a' }) }, 400],
  ['/v1/responses', { model: MODEL_ID, input: 'x', text: { format: { type: 'json_schema', schema: 7 } } }, 400],
  ['/v1/messages', { model: MODEL_ID, max_tokens: 8, messages: [{ role: 'user', content: 'and the earth '.repeat(500000) }] }, 400],
  ['/v1/messages', { model: MODEL_ID, max_tokens: '8', messages: [{ role: 'user', content: 'x' }] }, 400],
  ['/v1/messages', { model: MODEL_ID, max_tokens: 8, messages: [{ role: 'system', content: 'x' }] }, 400],
  ['/v1/messages', { model: MODEL_ID, max_tokens: 8, messages: [{ role: 'user', content: 'x' }], stop_sequences: [''] }, 400],
  ['/v1/messages', { model: 'nope', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }, 404],
  ['/v1/messages', { model: MODEL_ID, max_tokens: 8, messages: [{ role: 'user', content: 'x' }], tools: 'x' }, 400],
  ['/v1/messages', { model: MODEL_ID, max_tokens: 8, messages: [{ role: 'user', content: 'x' }], tools: [{ name: 'f', input_schema: { type: 'object' } }], tool_choice: 'any' }, 400],
  ['/v1/messages', { model: MODEL_ID, max_tokens: 8, messages: [{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'f', input: 'x' }] }] }, 400],
  ['/v1/messages', { model: MODEL_ID, max_tokens: 8, messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input: '{}' }] }] }, 400],
  ['/v1/messages', { model: MODEL_ID, max_tokens: 8, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 7, content: 'r' }] }] }, 400],
  ['/v1/messages', { model: MODEL_ID, max_tokens: 8, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: [{ type: 'text', text: 'and the earth '.repeat(500000) }] }] }] }, 400],
  ['/v1/messages/count_tokens', { model: MODEL_ID, messages: [{ role: 'user', content: 'and the earth '.repeat(500000) }] }, 400],
  ['/v1/messages/count_tokens', { model: MODEL_ID, messages: 'x' }, 400],
];

// Every top-level field each route reads, given each JSON type it does not take
// (null is "absent" everywhere): a 400. [route, a body it takes, {field: [types taken]}].
const MSGS = [{ role: 'user', content: 'x' }];
const FIELD_TYPES = [
  ['/v1/responses', { model: MODEL_ID, input: 'x', max_output_tokens: 1 }, {
    model: ['string'], input: ['string', 'array'], instructions: ['string'],
    max_output_tokens: ['number'], temperature: ['number'], top_p: ['number'],
    stream: ['boolean'], text: ['object'], truncation: ['string'], store: ['boolean'],
    metadata: ['object'], user: ['string'], tool_choice: ['string', 'object'], tools: ['array'],
    parallel_tool_calls: ['boolean'], previous_response_id: ['string'] }],
  ['/v1/messages', { model: MODEL_ID, max_tokens: 1, messages: MSGS }, {
    model: ['string'], max_tokens: ['number'], messages: ['array'], system: ['string', 'array'],
    stop_sequences: ['array'], temperature: ['number'], top_p: ['number'], top_k: ['number'],
    stream: ['boolean'], metadata: ['object'], tools: ['array'], tool_choice: ['object'] }],
  ['/v1/messages/count_tokens', { model: MODEL_ID, messages: MSGS }, {
    model: ['string'], messages: ['array'], system: ['string', 'array'], tools: ['array'],
    tool_choice: ['object'] }],
  ['/v1/embeddings', { model: MODEL_ID, input: 'x' }, {
    model: ['string'], input: ['string', 'array'], encoding_format: ['string'],
    dimensions: ['number'], user: ['string'] }],
  ['/api/embed', { model: MODEL_ID, input: 'x' }, {
    model: ['string'], input: ['string', 'array'], truncate: ['boolean'], dimensions: ['number'],
    options: ['object'], keep_alive: ['string', 'number'] }],
  ['/api/embeddings', { model: MODEL_ID, prompt: 'x' }, {
    model: ['string'], prompt: ['string'], options: ['object'], keep_alive: ['string', 'number'] }],
  ['/api/chat', { model: MODEL_ID, messages: MSGS, stream: false, options: { num_predict: 1 } }, {
    model: ['string'], messages: ['array'], stream: ['boolean'], format: ['string', 'object'],
    options: ['object'], tools: ['array'], keep_alive: ['string', 'number'] }],
  ['/api/generate', { model: MODEL_ID, prompt: 'x', stream: false, options: { num_predict: 1 } }, {
    model: ['string'], prompt: ['string'], system: ['string'], raw: ['boolean'],
    stream: ['boolean'], format: ['string', 'object'], options: ['object'],
    keep_alive: ['string', 'number'] }],
  ['/api/show', { model: MODEL_ID }, { model: ['string'], name: ['string'], verbose: ['boolean'] }],
  ['/tokenize', { content: 'x' }, {
    content: ['string'], add_special: ['boolean'], parse_special: ['boolean'],
    with_pieces: ['boolean'] }],
  ['/detokenize', { tokens: [1] }, { tokens: ['array'] }],
  ['/slots/0?action=save', { filename: 'a.bin' }, { filename: ['string'] }],
];
const OF_TYPE = { number: 7, string: 'x', boolean: true, array: [1], object: { a: 1 } };
for (const [path, body, fields] of FIELD_TYPES) {
  for (const [field, taken] of Object.entries(fields)) {
    for (const [type, value] of Object.entries(OF_TYPE))
      if (!taken.includes(type)) FAMILY_CASES.push([path, { ...body, [field]: value }, 400]);
  }
}
// Ollama's options, sampling (passed on) and runtime (ignored, but typed).
for (const [option, value] of [['temperature', 'x'], ['top_k', 'x'], ['seed', 'x'], ['stop', 5],
                               ['num_predict', 'x'], ['num_ctx', 'x'], ['use_mmap', 1]]) {
  for (const path of ['/api/chat', '/api/generate']) {
    const body = FIELD_TYPES.find(([p]) => p === path)[1];
    FAMILY_CASES.push([path, { ...body, options: { ...body.options, [option]: value } }, 400]);
  }
}
// Oversized inputs: 100,000 items where a few are expected, 1 MB strings where a short
// one is, and bodies past --max-body (8 MiB: a 413 in the route's own shape).
const MANY = 100000;
const MB = 'a'.repeat(1 << 20);
const manyMessages = Array(MANY).fill({ role: 'user', content: 'a' });
const PAST_MAX_BODY = { pad: 'b'.repeat(8 << 20) };
FAMILY_CASES.push(
  ['/v1/responses', { model: MODEL_ID, input: manyMessages }, 400],
  ['/v1/responses', { model: MODEL_ID, input: Array(MANY).fill('a') }, 400],
  ['/v1/responses', { model: MB, input: 'x' }, 404],
  ['/v1/responses', { model: MODEL_ID, input: [{ role: MB, content: 'x' }] }, 400],
  ['/v1/responses', { model: MODEL_ID, input: 'x', truncation: MB }, 400],
  ['/v1/responses', { model: MODEL_ID, input: 'x', previous_response_id: MB }, 400],
  ['/v1/responses', { model: MODEL_ID, input: 'x', metadata: { k: MB } }, 400],
  ['/v1/responses', { model: MODEL_ID, input: 'x',
    metadata: Object.fromEntries(Array.from({ length: MANY }, (_, i) => [`k${i}`, 'v'])) }, 400],
  ['/v1/messages', { model: MODEL_ID, max_tokens: 1, messages: manyMessages }, 400],
  ['/v1/messages', { model: MB, max_tokens: 1, messages: MSGS }, 404],
  ['/v1/messages', { model: MODEL_ID, max_tokens: 1, messages: MSGS, stop_sequences: Array(MANY).fill('a') }, 400],
  ['/v1/messages', { model: MODEL_ID, max_tokens: 1, messages: MSGS, stop_sequences: [MB] }, 400],
  ['/v1/messages', { model: MODEL_ID, max_tokens: 1,
    messages: [{ role: 'user', content: Array(MANY).fill({ type: 'text', text: 'a' }) }] }, 400],
  ['/v1/messages/count_tokens', { model: MODEL_ID, messages: manyMessages }, 400],
  ['/v1/embeddings', { model: MODEL_ID, input: Array(MANY).fill('a') }, 400],
  ['/v1/embeddings', { model: MODEL_ID, input: Array(MANY).fill(1) }, 400],
  ['/v1/embeddings', { model: MB, input: 'x' }, 404],
  ['/v1/embeddings', { model: MODEL_ID, input: 'x', encoding_format: MB }, 400],
  ['/api/embed', { model: MODEL_ID, input: Array(MANY).fill('a') }, 400],
  ['/api/chat', { model: MODEL_ID, messages: manyMessages, stream: false }, 400],
  ['/api/chat', { model: MB, messages: MSGS, stream: false }, 404],
  ['/api/chat', { model: MODEL_ID, messages: [{ role: MB, content: 'x' }], stream: false }, 400],
  ['/api/chat', { model: MODEL_ID, messages: MSGS, stream: false, options: { stop: Array(MANY).fill('a') } }, 400],
  ['/api/generate', { model: MODEL_ID, prompt: MB, stream: false }, 400],
  ['/api/generate', { model: MODEL_ID, prompt: 'x', stream: false, context: Array(MANY).fill(1) }, 400],
  ['/api/show', { model: MB }, 404],
  ['/detokenize', { tokens: Array(MANY).fill(1 << 30) }, 400],
  ['/slots/0?action=save', { filename: MB }, 400],
  // Unknown and path-like slot ids (GET /slots lists the valid ones).
  ['/slots/99999?action=erase', {}, 400],
  ['/slots/99999999999999999999?action=erase', {}, 400],
  ['/slots/-1?action=erase', {}, 400],
  ['/slots/..%2F..%2Fetc?action=erase', {}, 404],
  ['/slots/%FF?action=erase', {}, 400],
  ['/slots/0?action=..%2F..', {}, 400],
  ['/slots/0?action=restore', { filename: '../../etc/passwd' }, 400],
);
for (const path of ['/v1/responses', '/v1/messages', '/v1/messages/count_tokens', '/v1/embeddings',
                    '/api/chat', '/api/generate', '/api/show', '/api/embed', '/api/embeddings',
                    '/tokenize', '/detokenize', '/slots/0?action=save'])
  FAMILY_CASES.push([path, PAST_MAX_BODY, 413]);
// GETs by id: unknown, huge and path-like models (the ids of stored responses are
// checked with the store's test below).
for (const id of ['nope', 'r'.repeat(2000), '..%2F..%2Fetc%2Fpasswd', '%FF%FE', 'a/b'])
  FAMILY_CASES.push([`/v1/models/${id}`, null, 404]);

test('the API families refuse hostile bodies with a 4xx in their own error shape', { skip: ONE_THREAD_BOMB }, async () => {
  const slowest = { seconds: 0 };
  for (const [path, body, status] of FAMILY_CASES) {
    const what = `${path.slice(0, 60)} ${JSON.stringify(body)?.slice(0, 80)}`;
    const r = body === null ? await get(main.base, path) : await post(main.base, path, JSON.stringify(body));
    assert.equal(r.status, status, `${what}: ${r.text.slice(0, 300)}`);
    const message = path.startsWith('/api/') ? r.json?.error : r.json?.error?.message;
    if (path.startsWith('/v1/messages')) assert.equal(r.json?.type, 'error', what);
    assert.equal(typeof message, 'string', `${what}: ${r.text.slice(0, 300)}`);
    assert.ok(r.seconds < 2 * SLOW, `${what} took ${r.seconds.toFixed(2)} s`);
    if (r.seconds > slowest.seconds) Object.assign(slowest, { seconds: r.seconds, what });
  }
  console.log(`# ${FAMILY_CASES.length} hostile bodies refused; the slowest in ` +
              `${(slowest.seconds * 1000).toFixed(0)} ms: ${slowest.what}`);
  // Ollama cuts an input past the context: a 7 MB one is tokenized only as far as it needs.
  const cut = await post(main.base, '/api/embed',
                         JSON.stringify({ model: MODEL_ID, input: 'and the earth '.repeat(500000) }));
  assert.equal(cut.status, 200, cut.text.slice(0, 300));
  assert.ok(cut.seconds < 2 * SLOW, `a cut 7 MB input took ${cut.seconds.toFixed(2)} s`);
  // /tokenize takes any length, as llama-server's; each token's piece is written as it
  // goes (one JSON object per token held 0.7 GB for this 1 MB body).
  const pieces = await post(main.base, '/tokenize', JSON.stringify({ content: MB, with_pieces: true }));
  assert.equal(pieces.status, 200, pieces.text.slice(0, 300));
  assert.ok(pieces.json.tokens.length > 0 && pieces.json.tokens.length <= MB.length);
  assert.ok(pieces.seconds < 2 * SLOW, `/tokenize of 1 MB with pieces took ${pieces.seconds.toFixed(2)} s`);
  assert.ok(peakRss(main.proc.pid) < RSS_LIMIT);
  assert.ok((await healthy(main.base)).ok);
});

// The response store is bounded by count and bytes (serve --responses-max,
// --responses-max-bytes): 10,000 responses stored through HTTP (issue 41), the
// oldest evicted, the newest kept, the store's gauges at the bound, the server's
// memory flat once the store is full, and ids from a client (unknown, huge,
// path-like) 404s in OpenAI's shape. Under AddressSanitizer each response
// costs the server several times the CPU, and 10,000 would take well over a
// minute: 2,000 go through there (still 20 times the bound), and the RSS
// (the sanitizer's quarantine) is not checked.
const STORED = SANITIZED ? 2000 : 10000;
const STORE_MAX = 100;
const STORE_MAX_BYTES = 400000;
// Requests at once: enough to batch in the engine, few enough that the newest
// STORE_MAX - STORE_CONCURRENCY ids sent are certainly among the last stored.
const STORE_CONCURRENCY = 16;
// The RSS once the store is full (after STORE_WARMUP responses) may grow by at most this.
// Measured: well under 1 MiB from the 500th response to the 10,000th. A leak of 512 bytes
// a request (half a stored response) would add 4.6 MiB over the 9,500 after.
const STORE_WARMUP = 500;
const STORE_RSS_MARGIN = 4 * 2 ** 20;

// Resident memory of a process now (VmRSS), in bytes.
function rssNow(pid) {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
}

// A POST on a kept-alive connection of node:http: a quarter of fetch's CPU per
// request, which matters for 10,000 of them on a machine the server shares.
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: STORE_CONCURRENCY });
function postKeptAlive(port, path, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent: keepAlive,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
    (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text, retryAfter: res.headers['retry-after'] }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test(`${STORED} stored responses: the store and the RSS stay bounded, the oldest ids are 404s`,
     { timeout: 120000 * SLOW }, async () => {
  // A template of the content alone: a prompt of two tokens, not the model's fifteen,
  // makes each response cost the server under half the CPU.
  const plain = join(dir, 'plain.jinja');
  writeFileSync(plain, '{% for m in messages %}{{ m.content }}{% endfor %}');
  const s = await startServer(['--responses-max', String(STORE_MAX),
                               '--responses-max-bytes', String(STORE_MAX_BYTES), '--chat-template', plain]);
  try {
    const body = JSON.stringify({ model: MODEL_ID, input: 'In', max_output_tokens: 1 });
    const ids = new Array(STORED);
    let next = 0;
    let done = 0;
    let retried = 0;
    let warmRss = 0;
    let maxRss = 0;
    const t0 = performance.now();
    const worker = async () => {
      while (next < STORED) {
        const i = next++;
        let r = await postKeptAlive(s.port, '/v1/responses', body);
        for (; r.status === 429; ++retried) {
          await new Promise((resolve) => setTimeout(resolve, 1000 * Number(r.retryAfter ?? 1)));
          r = await postKeptAlive(s.port, '/v1/responses', body);
        }
        assert.equal(r.status, 200, r.text);
        ids[i] = JSON.parse(r.text).id;
        if (++done === STORE_WARMUP) warmRss = rssNow(s.proc.pid);
        else if (done > STORE_WARMUP && done % 100 === 0) maxRss = Math.max(maxRss, rssNow(s.proc.pid));
      }
    };
    await Promise.all(Array.from({ length: STORE_CONCURRENCY }, worker));
    const seconds = (performance.now() - t0) / 1000;
    const m = await metricValues(s.base);
    console.log(`# ${STORED} responses stored in ${seconds.toFixed(2)} s (${retried} retried after a 429); ` +
                `${m.kvforge_responses_stored} kept in ${m.kvforge_responses_stored_bytes} bytes; RSS ` +
                `${(warmRss / 2 ** 20).toFixed(1)} MiB after ${STORE_WARMUP}, at most ` +
                `${(maxRss / 2 ** 20).toFixed(1)} MiB after`);
    assert.equal(m.kvforge_responses_stored, STORE_MAX);
    assert.ok(m.kvforge_responses_stored_bytes > 0 && m.kvforge_responses_stored_bytes <= STORE_MAX_BYTES,
              `${m.kvforge_responses_stored_bytes} bytes stored`);
    if (!SANITIZED) {
      assert.ok(maxRss <= warmRss + STORE_RSS_MARGIN,
                `the RSS grew from ${warmRss} to ${maxRss} bytes once the store was full`);
    }
    const byId = async (id, method = 'GET') => {
      const res = await fetch(`${s.base}/v1/responses/${id}`, { method, headers: AUTH });
      return { status: res.status, json: await res.json() };
    };
    // The oldest nine tenths, one id in 50: evicted, in OpenAI's not-found shape.
    for (let i = 0; i < STORED * 0.9; i += 50) {
      const r = await byId(ids[i]);
      assert.equal(r.status, 404, `id ${i}: ${JSON.stringify(r.json)}`);
      assert.equal(r.json.error.type, 'invalid_request_error');
      assert.equal(r.json.error.message, `Response with id '${ids[i]}' not found.`);
    }
    // At most STORE_CONCURRENCY - 1 requests sent earlier were stored after any of these.
    for (const id of ids.slice(STORED - (STORE_MAX - STORE_CONCURRENCY))) {
      const r = await byId(id);
      assert.equal(r.status, 200, `${id}: ${JSON.stringify(r.json)}`);
      assert.equal(r.json.id, id);
    }
    for (const id of ['resp_unknown', 'r'.repeat(2000), '..%2F..%2Fetc%2Fpasswd', '%FF%FE', ids[0]]) {
      for (const method of ['GET', 'DELETE']) {
        const r = await byId(id, method);
        assert.equal(r.status, 404, `${method} ${id.slice(0, 40)}: ${JSON.stringify(r.json)}`);
        assert.equal(typeof r.json.error.message, 'string');
      }
    }
    const gone = await post(s.base, '/v1/responses',
                            JSON.stringify({ model: MODEL_ID, input: 'x', previous_response_id: ids[0] }));
    assert.equal(gone.status, 400, gone.text);
    assert.equal(gone.json.error.code, 'previous_response_not_found');
    assert.equal(gone.json.error.param, 'previous_response_id');
    const newest = ids.at(-1);
    assert.equal((await byId(newest, 'DELETE')).status, 200);
    assert.equal((await byId(newest)).status, 404);
    assert.equal((await metricValues(s.base)).kvforge_responses_stored, STORE_MAX - 1);
  } finally {
    keepAlive.destroy();
    s.proc.kill('SIGTERM');
    await s.exited;
  }
});

test('chat_template_kwargs may only add names', async () => {
  for (const name of ['messages', 'tools', 'add_generation_prompt', 'bos_token', 'eos_token',
                      'raise_exception', 'range', 'namespace']) {
    for (const value of [5, [], [{}]]) {
      const r = await post(main.base, '/v1/chat/completions',
                           chat('hi', { chat_template_kwargs: { [name]: value } }));
      assert.equal(r.status, 400, `${name}: ${r.text}`);
      assert.ok(r.json.error.message.includes(`'${name}'`), r.json.error.message);
      assert.ok(r.seconds < 2 * SLOW, `${name} took ${r.seconds.toFixed(2)} s`);
    }
  }
  const ok = await post(main.base, '/v1/chat/completions', chat('hi', { chat_template_kwargs: { flavour: 1 } }));
  assert.equal(ok.status, 200, ok.text);
});

test('32 concurrent 7 MB prompts: all 400, peak RSS under 1 GiB', async () => {
  const big = 'and the earth '.repeat(500000);  // 7 MB
  const alone = await post(main.base, '/v1/completions', JSON.stringify({ prompt: big }));
  assert.equal(alone.status, 400, alone.text.slice(0, 300));
  assert.ok(alone.seconds < 2 * SLOW, `one 7 MB prompt took ${alone.seconds.toFixed(2)} s`);
  console.log(`# one 7 MB prompt: 400 in ${alone.seconds.toFixed(2)} s`);
  // Each body encoded once, before any connection opens: encoding 32 x 7 MB as the requests
  // start kept this client's event loop busy for over 10 s on a loaded machine, past the
  // server's header deadline for the connections it had opened.
  const bodies = [Buffer.from(chat(big)), Buffer.from(JSON.stringify({ prompt: big }))];
  const t0 = performance.now();
  const results = await Promise.all(Array.from({ length: BIG_PROMPTS }, (_, i) => post(
      main.base, i % 2 ? '/v1/completions' : '/v1/chat/completions', bodies[i % 2])));
  const seconds = (performance.now() - t0) / 1000;
  for (const r of results) {
    assert.equal(r.status, 400, r.text.slice(0, 300));
    assert.equal(r.json.error.code, 'context_length_exceeded');
  }
  const rss = peakRss(main.proc.pid);
  console.log(`# ${BIG_PROMPTS} x 7 MB prompts: all 400 in ${seconds.toFixed(2)} s; server peak RSS ${(rss / 2 ** 20).toFixed(0)} MiB`);
  assert.ok(rss < RSS_LIMIT, `peak RSS ${rss}`);
  assert.ok((await healthy(main.base)).ok);
});

test('/metrics needs the API key; the Bearer scheme is case-insensitive', async () => {
  assert.equal((await fetch(`${main.base}/metrics`)).status, 401);
  assert.equal((await fetch(`${main.base}/metrics`, { headers: { Authorization: 'Bearer nope' } })).status, 401);
  assert.equal((await fetch(`${main.base}/metrics`, { headers: { Authorization: `Bearer ${API_KEY}x` } })).status, 401);
  for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
    const res = await fetch(`${main.base}/metrics`, { headers: { Authorization: `${scheme} ${API_KEY}` } });
    assert.equal(res.status, 200, scheme);
    await res.text();
  }
  const pub = await startServer(['--api-key', API_KEY, '--metrics-public']);
  try {
    assert.equal((await fetch(`${pub.base}/metrics`)).status, 200);
    assert.equal((await fetch(`${pub.base}/v1/models`)).status, 401);
  } finally {
    pub.proc.kill('SIGTERM');
    await pub.exited;
  }
});

test('a second server on a used port exits non-zero: address already in use', async () => {
  const s = spawnServer(['--port', String(main.port)]);
  const { code } = await s.exited;
  assert.notEqual(code, 0);
  assert.match(s.log(), /address already in use/i);
  assert.ok((await healthy(main.base)).ok);
});

// Connections that send a header line every 2 s and never finish.
function slowConnections(port, count) {
  const sockets = [];
  for (let i = 0; i < count; ++i) {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    s.on('connect', () => s.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\n'));
    sockets.push(s);
  }
  const timer = setInterval(() => { for (const s of sockets) if (!s.destroyed) s.write('X-Slow: 1\r\n'); }, 2000);
  return { sockets, close: () => { clearInterval(timer); for (const s of sockets) s.destroy(); } };
}

async function connected(sockets) {
  await Promise.all(sockets.map((s) => new Promise((resolve) => {
    if (!s.connecting) resolve(); else { s.once('connect', resolve); s.once('error', resolve); }
  })));
}

test('1,000 slow connections: /health within 1 s, requests still complete', async () => {
  const slow = slowConnections(main.port, SLOW_CONNECTIONS);
  try {
    await connected(slow.sockets);
    await new Promise((r) => setTimeout(r, 2500));
    const h = await healthy(main.base);
    console.log(`# /health with ${SLOW_CONNECTIONS} slow connections open: ${(h.seconds * 1000).toFixed(0)} ms`);
    assert.ok(h.ok && h.seconds < 1 * SLOW, `/health took ${h.seconds}`);
    const r = await post(main.base, '/v1/completions', JSON.stringify({ prompt: 'In the beginning', max_tokens: 8 }));
    assert.equal(r.status, 200, r.text);
    console.log(`# a completion with ${SLOW_CONNECTIONS} slow connections open: ${(r.seconds * 1000).toFixed(0)} ms`);
  } finally {
    slow.close();
  }
});

test('beyond the connection cap: 503, and /health still answers', async () => {
  const s = await startServer(['--http-threads', '8']);
  const slow = slowConnections(s.port, 8);
  try {
    await connected(slow.sockets);
    await new Promise((r) => setTimeout(r, 300));
    const r = await post(s.base, '/v1/completions', JSON.stringify({ prompt: 'In', max_tokens: 2 }));
    assert.equal(r.status, 503, r.text);
    assert.match(r.json.error.message, /too many open connections/);
    assert.ok((await healthy(s.base)).ok);
  } finally {
    slow.close();
    s.proc.kill('SIGTERM');
    await s.exited;
  }
});

// A raw connection that sends `head` at once and then `drip` every `every` ms
// until the server closes it; resolves to what the server answered and when it closed.
function dribble(port, head, drip, every) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let answer = '';
    // The drips start once the head is written: a socket buffers writes made
    // while it connects, so a timer started before could send drips first.
    let timer = null;
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(head);
      timer = setInterval(() => { if (!socket.destroyed && socket.writable) socket.write(drip); }, every);
    });
    socket.on('data', (d) => { answer += d; });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ answer, seconds: (performance.now() - t0) / 1000 });
    });
  });
}

// Short read deadlines, so that the tests of them take a few seconds.
const HEADER_TIMEOUT = 2;
// Slack for the client's own view of a close: with 1,000 sockets on a loaded 2-core machine its
// event loop lags; a connection the deadline did not cut would stay open for the whole test.
const DEADLINE_SLACK = 2.5 * SLOW;
const HEAD = 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n';

test('requests dribbled in are cut off at their read deadline with a 408', { timeout: 30000 * SLOW }, async () => {
  const s = await startServer(['--header-timeout', String(HEADER_TIMEOUT), '--body-timeout', '4',
                               '--max-body', String(1 << 20)]);
  try {
    const [line, headers, body] = await Promise.all([
      dribble(s.port, 'POST /v1/compl', 'e', 300),
      dribble(s.port, HEAD, 'X-Slow: 1\r\n', 500),
      dribble(s.port, HEAD + 'Content-Length: 1000\r\n\r\n{"prompt":"', 'a', 200),
    ]);
    for (const [what, r, message] of [
      ['request line', line, /request line and headers did not arrive within 2 s/],
      ['headers', headers, /request line and headers did not arrive within 2 s/],
      // 1,000 bytes get the floor (the header timeout), not 4 s x 1000 / 1 MiB.
      ['body', body, /request body did not arrive within 2 s/],
    ]) {
      console.log(`# dribbled ${what}: closed after ${r.seconds.toFixed(2)} s: ${r.answer.split('\r\n')[0]}`);
      assert.match(r.answer, /^HTTP\/1\.1 408 /, `${what}: ${r.answer}`);
      assert.match(JSON.parse(r.answer.slice(r.answer.indexOf('\r\n\r\n') + 4)).error.message, message);
      assert.ok(r.seconds >= HEADER_TIMEOUT - 0.1 && r.seconds < HEADER_TIMEOUT + DEADLINE_SLACK,
                `${what}: closed after ${r.seconds} s`);
    }
    const big = await dribble(s.port, HEAD + ('X-More: ' + 'b'.repeat(1000) + '\r\n').repeat(70), '', 10000);
    assert.match(big.answer, /^HTTP\/1\.1 431 /, big.answer);
    assert.match(big.answer, /exceed 65536 bytes/);
    // cpp-httplib 0.11 checks --max-body against a Content-Length only: it read a chunked body whole.
    const chunk = `10000\r\n${'c'.repeat(0x10000)}\r\n`;
    const chunked = await dribble(s.port, HEAD + 'Transfer-Encoding: chunked\r\n\r\n', chunk, 1);
    assert.match(chunked.answer, /^HTTP\/1\.1 413 /, chunked.answer);
    assert.match(chunked.answer, /request body exceeds 1048576 bytes/);
    const ok = await post(s.base, '/v1/completions', JSON.stringify({ prompt: 'In', max_tokens: 2 }));
    assert.equal(ok.status, 200, ok.text);
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
  }
});

test('1,000 dribbling connections: /health within 1 s, requests complete, all cut at the deadline', { timeout: 30000 * SLOW }, async () => {
  const s = await startServer(['--header-timeout', String(HEADER_TIMEOUT)]);
  try {
    const closes = Array.from({ length: SLOW_CONNECTIONS }, (_, i) => (i % 2
      ? dribble(s.port, HEAD, 'X-Slow: 1\r\n', 500)
      : dribble(s.port, HEAD + 'Content-Length: 100\r\n\r\n', 'a', 300)));
    await new Promise((r) => setTimeout(r, 1000));
    const h = await healthy(s.base);
    const r = await post(s.base, '/v1/completions', JSON.stringify({ prompt: 'In the beginning', max_tokens: 8 }));
    const results = await Promise.all(closes);
    const last = Math.max(...results.map((c) => c.seconds));
    const answered408 = results.filter((c) => / 408 /.test(c.answer.split('\r\n')[0])).length;
    console.log(`# ${SLOW_CONNECTIONS} dribbling connections: /health in ${(h.seconds * 1000).toFixed(0)} ms, ` +
                `a completion in ${(r.seconds * 1000).toFixed(0)} ms, all closed by ${last.toFixed(2)} s ` +
                `(${answered408} read a 408)`);
    assert.ok(h.ok && h.seconds < 1 * SLOW, `/health took ${h.seconds}`);
    assert.equal(r.status, 200, r.text);
    assert.ok(last < HEADER_TIMEOUT + DEADLINE_SLACK, `the last connection closed after ${last} s`);
    // On a connection of its own: fetch would reuse the kept-alive one of the
    // first check, which the server may be closing at this moment (idle for
    // the header timeout), and report that race as a failed fetch.
    const after = await exchange(s.port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.deepEqual(after.statuses, [200], after.answer);
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
  }
});

// Sends `bytes` on a raw connection and collects what the server answers until
// it closes the connection (or `seconds` pass: then `closed` is false).
function exchange(port, bytes, seconds = 10) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let answer = '';
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    const timer = setTimeout(() => { socket.destroy(); finish(false); }, seconds * 1000);
    let done = false;
    const finish = (closed) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
      resolve({ answer, statuses, closed, seconds: (performance.now() - t0) / 1000 });
    };
    socket.on('data', (d) => { answer += d; });
    socket.on('error', () => {});
    socket.on('close', () => finish(true));
  });
}

// Issue 42, finding 6: the rest of a refused request was served as new requests.
test('badly framed requests get exactly one answer and a closed connection', async () => {
  const inner = 'GET /v1/models HTTP/1.1\r\nHost: x\r\n' + `Authorization: ${AUTH.Authorization}\r\n\r\n`;
  const n = Buffer.byteLength(inner);
  const postWith = (fields) => `POST /v1/completions HTTP/1.1\r\nHost: x\r\n${fields}\r\n${inner}`;
  const cases = [
    ['a header line over 8 KiB', postWith(`X-Long: ${'a'.repeat(9000)}\r\nContent-Length: ${n}\r\n`), 400],
    ['differing Content-Lengths', postWith(`Content-Length: ${n}\r\nContent-Length: 0\r\n`), 400],
    ['Content-Length +N', postWith(`Content-Length: +${n}\r\n`), 400],
    ['Content-Length "N, 5"', postWith(`Content-Length: ${n}, 5\r\n`), 400],
    ['Content-Length 0x1e', postWith('Content-Length: 0x1e\r\n'), 400],
    ['an unknown Transfer-Encoding beside Content-Length', postWith(`Transfer-Encoding: gzip\r\nContent-Length: ${n}\r\n`), 400],
    ['an unknown Transfer-Encoding', postWith('Transfer-Encoding: gzip\r\n'), 501],
    ['a request line without a version', 'GET /health\r\n\r\n', 400],
    ['a NUL in Authorization', `GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH.Authorization}\0junk\r\n\r\n`, 400],
    ['a gzip body', postWith(`Content-Encoding: gzip\r\nContent-Length: ${n}\r\n`), 415],
  ];
  for (const [what, bytes, status] of cases) {
    const r = await exchange(main.port, bytes);
    assert.deepEqual(r.statuses, [status], `${what}: ${r.answer}`);
    assert.ok(r.closed, `${what}: the connection stayed open`);
    assert.equal(typeof JSON.parse(r.answer.slice(r.answer.indexOf('\r\n\r\n') + 4)).error.message, 'string', what);
  }
  assert.ok((await healthy(main.base)).ok);
});

// Finding "smaller": a stalled request was a 400 "malformed" at httplib's 5 s read timeout;
// it is a 408 at the header timeout (10 s by default).
test('a request that stops arriving is a 408', { timeout: 30000 * SLOW }, async () => {
  const head = `POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH.Authorization}\r\n`;
  const [inHead, inBody] = await Promise.all([
    exchange(main.port, head, 20 * SLOW),
    exchange(main.port, head + 'Content-Length: 100\r\n\r\n{"prompt":', 20 * SLOW),
  ]);
  for (const [what, r] of [['head', inHead], ['body', inBody]]) {
    assert.deepEqual(r.statuses, [408], `${what}: ${r.answer}`);
    assert.match(r.answer, /stalled: no byte arrived for 10 s|did not arrive within 10 s/, what);
  }
});

// Finding 5: 80,000 unknown keys took 6.1 s to refuse, a 150,000-entry logit_bias 16.9 s.
test('huge JSON objects are refused in linear time; duplicate keys are refused', { skip: ONE_THREAD_BOMB }, async () => {
  const keys = Object.fromEntries(Array.from({ length: 80000 }, (_, i) => [`k${i}`, i]));
  const unknown = await post(main.base, '/v1/completions', JSON.stringify({ prompt: 'a', ...keys }));
  assert.equal(unknown.status, 400, unknown.text);
  assert.match(unknown.json.error.message, /'k0' is not supported/);
  const bias = Object.fromEntries(Array.from({ length: 150000 }, (_, i) => [String(i), 1]));
  const biased = await post(main.base, '/v1/completions', JSON.stringify({ prompt: 'a', logit_bias: bias }));
  assert.equal(biased.status, 400, biased.text);
  console.log(`# 80,000 unknown keys refused in ${(unknown.seconds * 1000).toFixed(0)} ms, ` +
              `a 150,000-entry logit_bias in ${(biased.seconds * 1000).toFixed(0)} ms`);
  assert.ok(unknown.seconds < 1 * SLOW, `80,000 keys took ${unknown.seconds} s`);
  // 0.2-0.4 s here idle, 1.5 s once beside a 2-thread busy loop; quadratic took 16.9 s.
  assert.ok(biased.seconds < 4 * SLOW, `150,000 logit_bias entries took ${biased.seconds} s`);
  const dup = await post(main.base, '/v1/completions', '{"prompt":"a","max_tokens":1,"max_tokens":2}');
  assert.equal(dup.status, 400, dup.text);
  assert.match(dup.json.error.message, /'max_tokens' twice/);
});

// Finding 7: past the cap, 8 threads waited out each slow client's header deadline in turn.
test('connections past the cap are answered at once; /health stays live', { timeout: 60000 * SLOW }, async () => {
  // Unsanitized: the default cap of 2,048 and 2,100 slow connections; sanitized, a cap of 100 and 120.
  const cap = SANITIZED ? 100 : 2048;
  const s = await startServer(SANITIZED ? ['--http-threads', String(cap)] : []);
  const slow = slowConnections(s.port, cap + 52);
  try {
    await connected(slow.sockets);
    await new Promise((r) => setTimeout(r, 1500));
    const h = await healthy(s.base);
    const r = await post(s.base, '/v1/completions', JSON.stringify({ prompt: 'In', max_tokens: 2 }));
    console.log(`# ${cap + 52} slow connections at a cap of ${cap}: /health in ${(h.seconds * 1000).toFixed(0)} ms, ` +
                `a request past the cap answered ${r.status} in ${(r.seconds * 1000).toFixed(0)} ms`);
    assert.ok(h.ok && h.seconds < 1, `/health took ${h.seconds} s`);
    assert.equal(r.status, 503, r.text);
    assert.match(r.json.error.message, /too many open connections/);
    assert.ok(r.seconds < 1 * SLOW, `the 503 took ${r.seconds} s`);
  } finally {
    slow.close();
    s.proc.kill('SIGTERM');
    await s.exited;
  }
});

async function metricValues(base) {
  const res = await fetch(`${base}/metrics`, { headers: AUTH });
  const values = {};
  for (const line of (await res.text()).split('\n')) {
    const m = /^(\S+) (\S+)$/.exec(line);
    if (m) values[m[1]] = Number(m[2]);
  }
  return values;
}

// CPU seconds the process has used (user + system).
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

// Waits until `done(metrics, seconds waited)` or `seconds` pass; returns the last metrics and the time taken.
async function waitMetrics(base, done, seconds) {
  const t0 = performance.now();
  let m;
  while (true) {
    m = await metricValues(base);
    if (done(m, (performance.now() - t0) / 1000) || performance.now() - t0 > seconds * 1000) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return { m, seconds: (performance.now() - t0) / 1000 };
}

// Sends a request on a raw connection and closes it once `leave(metrics, seconds)` is true.
async function leaveWhen(port, body, leave) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await new Promise((r) => socket.once('connect', r));
  socket.write(`POST ${body.path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH.Authorization}\r\n` +
               `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body.json)}\r\n\r\n${body.json}`);
  let received = '';
  socket.on('data', (d) => { received += d; });
  await waitMetrics(main.base, leave, 20);
  socket.destroy();
  return received;
}

test('a client that leaves mid-generation or mid-render is abandoned: KV freed, CPU idle', { timeout: 30000 * SLOW }, async () => {
  const DISCONNECTS = 'kvforge_client_disconnects_total';
  const GONE_RENDER = 'kvforge_requests_total{endpoint="/v1/chat/completions",status="499"}';
  const long = { prompt: 'In the beginning', max_tokens: 240, n: 4, temperature: 0 };
  const cases = [
    ['streaming generation', { path: '/v1/completions', json: JSON.stringify({ ...long, stream: true }) },
     (m) => m.kvforge_kv_blocks_used > 0, [DISCONNECTS]],
    ['non-streaming generation', { path: '/v1/completions', json: JSON.stringify(long) },
     (m) => m.kvforge_kv_blocks_used > 0, [DISCONNECTS]],
    // Left as soon as sent: the render, far shorter than a generation, finds its client
    // gone at its first look.
    ['template render', { path: '/v1/chat/completions', json: chat('slow-render') },
     () => true, [DISCONNECTS, GONE_RENDER]],
  ];
  for (const [what, body, started, counters] of cases) {
    const before = await metricValues(main.base);
    const t0 = performance.now();
    const received = await leaveWhen(main.port, body, started);
    const left = performance.now();
    const { m, seconds } = await waitMetrics(main.base, (v) =>
      v.kvforge_kv_blocks_used === 0 && v.kvforge_requests_in_flight === 0 &&
      counters.every((c) => (v[c] ?? 0) > (before[c] ?? 0)), 10);
    const cpu0 = cpuSeconds(main.proc.pid);
    await new Promise((r) => setTimeout(r, 500));
    const cpu = cpuSeconds(main.proc.pid) - cpu0;
    const tokens = m.kvforge_generation_tokens_total - before.kvforge_generation_tokens_total;
    console.log(`# ${what}: left after ${((left - t0) / 1000).toFixed(2)} s, abandoned ` +
                `${seconds.toFixed(2)} s later (${tokens} of 960 tokens); CPU in the next 0.5 s: ${cpu.toFixed(2)} s`);
    assert.ok(!/^HTTP\/1\.1 200/.test(received) || body.json.includes('"stream":true'), `${what}: answered ${received}`);
    for (const c of counters) assert.equal((m[c] ?? 0) - (before[c] ?? 0), 1, `${what}: counted in ${c}`);
    assert.equal(m.kvforge_kv_blocks_used, 0, `${what}: KV freed`);
    assert.equal(m.kvforge_requests_in_flight, 0, what);
    assert.ok(seconds < 1 * SLOW, `${what}: abandoned after ${seconds} s`);
    assert.ok(tokens < 960, `${what}: finished before the client left`);
    assert.ok(cpu < 0.1, `${what}: ${cpu} s of CPU in the 0.5 s after`);
  }
  assert.ok((await healthy(main.base)).ok);
});

test('SIGTERM with 1,000 slow connections and requests in flight: exit within 5 s', async () => {
  const slow = slowConnections(main.port, SLOW_CONNECTIONS);
  await connected(slow.sockets);
  // In flight: a long streaming generation, and template bombs being rendered.
  const inflight = [
    fetch(`${main.base}/v1/completions`, { method: 'POST', headers: AUTH,
      body: JSON.stringify({ prompt: 'In the beginning', max_tokens: 200, stream: true }) })
        .then((res) => res.text()).catch(() => {}),
    ...Object.keys(BOMBS).map((name) => post(main.base, '/v1/chat/completions', chat(name)).catch(() => {})),
  ];
  await new Promise((r) => setTimeout(r, 300));
  const rss = peakRss(main.proc.pid);
  const t0 = performance.now();
  main.proc.kill('SIGTERM');
  const { code, signal } = await main.exited;
  const seconds = (performance.now() - t0) / 1000;
  slow.close();
  await Promise.all(inflight);
  console.log(`# SIGTERM: exited (${code ?? signal}) in ${seconds.toFixed(2)} s; peak RSS ${(rss / 2 ** 20).toFixed(0)} MiB`);
  assert.ok(seconds < 5, `exit took ${seconds} s`);
  assert.ok(rss < RSS_LIMIT);
  assert.match(main.log(), /kvforge serve: stopped|exiting now/);
});
