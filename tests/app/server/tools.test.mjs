// Tool calls through `kvforge serve` (issue 39) with the official openai SDK:
// tool_choice required / a named function / auto / none, parallel_tool_calls,
// streamed calls assembled by the SDK, runTools completing a round trip, and
// a conversation holding assistant tool_calls and tool results. Every call's
// arguments validate against its function's schema (ajv). Run on the default
// model (no chat template: the generic form), on the same model with a
// Hermes-style template (--chat-template; Qwen's <tool_call> form), on a
// Mistral-style one ([TOOL_CALLS]name[ARGS]{...}), and by
// run_server_tests.sh on a random-weight model. KVFORGE_BIN, KVFORGE_MODEL
// from the environment.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import Ajv2020 from 'ajv/dist/2020.js';
import { startServer, stopServer } from './serve_process.mjs';
import { weather, add } from './tool_fixtures.mjs';

const ajv = new Ajv2020({ strict: false });
const tools = [weather, add];
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];

// A template in the Hermes / Qwen 2.5 form, as far as tools go.
const hermesTemplate = `{%- if tools %}<|system|>Tools:{% for t in tools %}
{{ t | tojson }}{% endfor %}
Call with <tool_call>
{"name": <name>, "arguments": <args>}
</tool_call>
{% endif %}{%- for m in messages %}{%- if m.role == 'tool' %}<tool_response>{{ m.content }}</tool_response>
{% elif m.tool_calls %}{% for c in m.tool_calls %}<tool_call>
{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}
</tool_call>
{% endfor %}{% else %}{{ m.role }}: {{ m.content }}
{% endif %}{%- endfor %}{%- if add_generation_prompt %}assistant:{% endif %}`;

// Mistral Small 3.2 / Devstral's form: [TOOL_CALLS]name[ARGS]{...} per call.
const mistralTemplate = `{%- if tools %}[AVAILABLE_TOOLS]{{ tools | tojson }}[/AVAILABLE_TOOLS]{% endif %}
{%- for m in messages %}{%- if m.role == 'user' %}[INST]{{ m.content }}[/INST]
{%- elif m.tool_calls %}{% for c in m.tool_calls %}[TOOL_CALLS]{{ c.function.name }}[ARGS]{{ c.function.arguments | tojson }}{% endfor %}</s>
{%- elif m.role == 'tool' %}[TOOL_RESULTS]{{ m.tool_call_id }}[TOOL_CONTENT]{{ m.content }}[/TOOL_RESULTS]
{%- else %}{{ m.content }}</s>{% endif %}{%- endfor %}`;

const servers = {};
const clients = {};
let templateDir;

before(async () => {
  templateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvforge-tools-'));
  const file = path.join(templateDir, 'hermes.jinja');
  fs.writeFileSync(file, hermesTemplate);
  const mistralFile = path.join(templateDir, 'mistral.jinja');
  fs.writeFileSync(mistralFile, mistralTemplate);
  servers.generic = await startServer(['-c', '2048']);
  servers.hermes = await startServer(['-c', '2048', '--chat-template', file]);
  servers.mistral = await startServer(['-c', '2048', '--chat-template', mistralFile]);
  for (const [name, s] of Object.entries(servers))
    clients[name] = new OpenAI({ baseURL: `http://127.0.0.1:${s.port}/v1`, apiKey: 'none', maxRetries: 0 });
});
after(async () => {
  for (const s of Object.values(servers)) await stopServer(s.proc);
  fs.rmSync(templateDir, { recursive: true, force: true });
});

function checkCalls(message, allowed = tools) {
  assert.ok(message.tool_calls?.length > 0, JSON.stringify(message));
  assert.equal(message.content, null);
  const ids = new Set();
  for (const call of message.tool_calls) {
    assert.equal(call.type, 'function');
    assert.match(call.id, /^call_[0-9a-f]{24}$/);
    ids.add(call.id);
    const tool = allowed.find((t) => t.function.name === call.function.name);
    assert.ok(tool, `called ${call.function.name}`);
    const args = JSON.parse(call.function.arguments);
    const validate = ajv.compile(tool.function.parameters);
    assert.ok(validate(args), `${call.function.arguments}: ${JSON.stringify(validate.errors)}`);
  }
  assert.equal(ids.size, message.tool_calls.length, 'ids are unique');
}

for (const form of ['generic', 'hermes']) {
  test(`${form}: tool_choice required, n = 2, sampled: every reply is valid calls`, async () => {
    const r = await clients[form].chat.completions.create({
      messages, tools, tool_choice: 'required', n: 2, temperature: 1, seed: 4 });
    for (const c of r.choices) {
      assert.equal(c.finish_reason, 'tool_calls');
      checkCalls(c.message);
    }
  });

  test(`${form}: a named function, parallel_tool_calls false: exactly that one call`, async () => {
    const r = await clients[form].chat.completions.create({
      messages, tools, tool_choice: { type: 'function', function: { name: 'add' } },
      parallel_tool_calls: false, temperature: 1, seed: 9 });
    const m = r.choices[0].message;
    checkCalls(m, [add]);
    assert.equal(m.tool_calls.length, 1);
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
  });

  test(`${form}: streamed calls are assembled by the SDK`, async () => {
    const stream = clients[form].chat.completions.stream({
      messages, tools, tool_choice: 'required', temperature: 0.7, seed: 2 });
    let pieces = 0;
    stream.on('tool_calls.function.arguments.delta', () => { ++pieces; });
    const done = await stream.finalChatCompletion();
    assert.equal(done.choices[0].finish_reason, 'tool_calls');
    checkCalls(done.choices[0].message);
    assert.ok(pieces > 1, `arguments came in ${pieces} pieces`);
  });

  test(`${form}: auto gives text or valid calls; none gives text`, async () => {
    for (const seed of [1, 2, 3]) {
      const r = await clients[form].chat.completions.create({
        messages, tools, tool_choice: 'auto', temperature: 1, seed, max_tokens: 60 });
      const c = r.choices[0];
      if (c.finish_reason === 'tool_calls') checkCalls(c.message);
      else assert.equal(c.message.tool_calls, undefined);
    }
    const r = await clients[form].chat.completions.create({
      messages, tools, tool_choice: 'none', max_tokens: 8 });
    assert.equal(r.choices[0].message.tool_calls, undefined);
    assert.equal(typeof r.choices[0].message.content, 'string');
  });

  test(`${form}: runTools completes a round trip`, async () => {
    const seen = [];
    const runner = clients[form].chat.completions.runTools({
      messages, seed: 3,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      tools: [{
        type: 'function',
        function: {
          ...weather.function,
          parse: JSON.parse,
          function: (args) => { seen.push(args); return { temperature: 21, unit: args.unit }; },
        },
      }],
    });
    const final = await runner.finalChatCompletion();
    assert.equal(seen.length, 1);
    assert.ok(ajv.compile(weather.function.parameters)(seen[0]));
    const history = runner.messages;
    assert.equal(history.at(-1).role, 'tool');
    assert.match(history.at(-1).content, /21/);
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
  });

  test(`${form}: history with tool calls and results is rendered and answered`, async () => {
    const r = await clients[form].chat.completions.create({
      tools, max_tokens: 8,
      messages: [
        ...messages,
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temperature": 21}' },
      ],
      tool_choice: 'none' });
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.ok(r.usage.prompt_tokens > 20);
  });
}

test('mistral [TOOL_CALLS]name[ARGS]: required and named calls, whole and streamed', async () => {
  const r = await clients.mistral.chat.completions.create({
    messages, tools, tool_choice: 'required', n: 2, temperature: 1, seed: 4 });
  for (const c of r.choices) {
    assert.equal(c.finish_reason, 'tool_calls');
    checkCalls(c.message);
  }
  const named = await clients.mistral.chat.completions.create({
    messages, tools, tool_choice: { type: 'function', function: { name: 'add' } },
    parallel_tool_calls: false, temperature: 1, seed: 9 });
  checkCalls(named.choices[0].message, [add]);
  assert.equal(named.choices[0].message.tool_calls.length, 1);
  const stream = clients.mistral.chat.completions.stream({
    messages, tools, tool_choice: 'required', temperature: 0.7, seed: 2 });
  const done = await stream.finalChatCompletion();
  assert.equal(done.choices[0].finish_reason, 'tool_calls');
  checkCalls(done.choices[0].message);
  // A history with a call and its result renders (ids rewritten to Mistral's 9 characters).
  const h = await clients.mistral.chat.completions.create({
    tools, max_tokens: 4, tool_choice: 'none',
    messages: [...messages,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '21' }] });
  assert.equal(h.choices[0].message.role, 'assistant');
});

test('the Hermes template sees the tools and the calls in its own form', async () => {
  // The prompt renders the tools and the earlier call as the template writes them.
  const res = await fetch(`http://127.0.0.1:${servers.hermes.port}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages, tools, tool_choice: 'required', temperature: 0 }) });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  checkCalls(body.choices[0].message);
});

test('bad tool fields are 400s naming the field', async () => {
  const cases = [
    [{ tools, tool_choice: 'sometimes' }, 'tool_choice'],
    [{ tools, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice'],
    [{ tool_choice: 'required' }, 'tool_choice'],
    [{ tools: [{ type: 'code_interpreter' }] }, 'tools'],
    [{ tools: [{ type: 'function', function: { name: 'f', parameters: {}, extra: 1 } }] }, 'tools'],
    [{ tools: [{ type: 'function', function: { name: 'bad name' } }] }, 'tools'],
    [{ tools: [weather, weather] }, 'tools'],
    [{ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object',
      properties: { x: { type: 'string', multipleOf: 2 } } } } }] }, 'tools'],
    [{ tools, parallel_tool_calls: 'yes' }, 'parallel_tool_calls'],
    [{ tools, response_format: { type: 'json_object' } }, 'response_format'],
    [{ tools, stream: true, logprobs: true }, 'logprobs'],
  ];
  for (const [fields, param] of cases) {
    const res = await fetch(`http://127.0.0.1:${servers.generic.port}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages, max_tokens: 4, ...fields }) });
    const body = await res.json();
    assert.equal(res.status, 400, JSON.stringify(fields));
    assert.equal(body.error.param, param, JSON.stringify(body));
  }
});
