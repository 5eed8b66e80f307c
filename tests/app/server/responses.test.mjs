// OpenAI's Responses API on `kvforge serve` (issue 41), driven by the openai
// client's responses.create, streamed and not: greedy text equal to
// /v1/chat/completions on the same conversation, the documented event
// sequence, text.format json_schema through the grammar, the refusals, and
// stored responses: retrieve, delete, 404 for unknown ids, and a 5-turn
// previous_response_id chain whose greedy text equals chat completions
// resending the whole conversation while the prefix cache serves the history;
// the Vercel AI SDK's default provider (`openai(model)`, which speaks the
// Responses API) through generateText and streamText.
// Run by run_server_tests.sh (CTest: server_apis).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { generateText, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, stopServer } from './serve_process.mjs';

const MODEL = 'kvforge-kjv-4m';
let server;
let client;

before(async () => {
  server = await startServer(['--max-seqs', '4']);
  client = new OpenAI({ baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: 'unused',
                        maxRetries: 0 });
});

after(async () => { await stopServer(server.proc); });

const INSTRUCTIONS = 'Answer in the words of the King James Bible.';
const INPUT = [{ role: 'user', content: 'Tell of the flood' },
               { role: 'assistant', content: [{ type: 'output_text', text: 'The waters rose.' }] },
               { role: 'user', content: [{ type: 'input_text', text: 'And then?' }] }];
const chatReference = (max) => client.chat.completions.create({
  model: MODEL, max_tokens: max, temperature: 0,
  messages: [{ role: 'system', content: INSTRUCTIONS }, { role: 'user', content: 'Tell of the flood' },
             { role: 'assistant', content: 'The waters rose.' }, { role: 'user', content: 'And then?' }],
});

test('responses.create: greedy text and usage equal chat completions', async () => {
  const ref = await chatReference(12);
  const res = await client.responses.create({ model: MODEL, instructions: INSTRUCTIONS, input: INPUT,
                                              max_output_tokens: 12, temperature: 0 });
  assert.equal(res.object, 'response');
  assert.match(res.id, /^resp_/);
  assert.equal(res.output_text, ref.choices[0].message.content);
  assert.equal(res.output[0].type, 'message');
  assert.equal(res.output[0].role, 'assistant');
  assert.equal(res.usage.input_tokens, ref.usage.prompt_tokens);
  assert.equal(res.usage.output_tokens, ref.usage.completion_tokens);
  const cut = ref.choices[0].finish_reason === 'length';
  assert.equal(res.status, cut ? 'incomplete' : 'completed');
  if (cut) assert.equal(res.incomplete_details.reason, 'max_output_tokens');
  const plain = await client.responses.create({ model: MODEL, input: 'In the beginning',
                                                max_output_tokens: 4, store: false });
  assert.equal(plain.usage.output_tokens, 4);
});

test('AI SDK default provider (Responses API): generateText and streamText', async () => {
  const ref = await chatReference(12);
  const openai = createOpenAI({ baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: 'unused' });
  const model = openai(MODEL);  // the default: /v1/responses
  const common = { model, system: INSTRUCTIONS, maxOutputTokens: 12, temperature: 0, maxRetries: 0,
                   messages: [{ role: 'user', content: 'Tell of the flood' },
                              { role: 'assistant', content: 'The waters rose.' },
                              { role: 'user', content: 'And then?' }] };
  const generated = await generateText(common);
  assert.equal(generated.text, ref.choices[0].message.content);
  assert.equal(generated.finishReason, ref.choices[0].finish_reason === 'length' ? 'length' : 'stop');
  assert.equal(generated.usage.inputTokens, ref.usage.prompt_tokens);
  assert.equal(generated.usage.outputTokens, ref.usage.completion_tokens);
  assert.match(generated.response.id, /^resp_/);
  const streamed = streamText(common);
  let text = '', pieces = 0;
  for await (const piece of streamed.textStream) { text += piece; ++pieces; }
  assert.equal(text, ref.choices[0].message.content);
  assert.ok(pieces > 1, 'streamed in pieces');
  assert.match((await streamed.response).id, /^resp_/);
});

test('streaming: the documented event sequence, deltas adding up to the text', async () => {
  const ref = await chatReference(12);
  const stream = await client.responses.create({ model: MODEL, instructions: INSTRUCTIONS,
                                                 input: INPUT, max_output_tokens: 12,
                                                 temperature: 0, stream: true });
  const types = [];
  let text = '';
  let last;
  for await (const event of stream) {
    types.push(event.type);
    assert.equal(event.sequence_number, types.length - 1);
    if (event.type === 'response.output_text.delta') text += event.delta;
    last = event;
  }
  const deltas = types.filter((t) => t === 'response.output_text.delta').length;
  assert.ok(deltas > 0);
  const end = ref.choices[0].finish_reason === 'length' ? 'response.incomplete' : 'response.completed';
  assert.deepEqual(types, ['response.created', 'response.in_progress', 'response.output_item.added',
                           'response.content_part.added',
                           ...Array(deltas).fill('response.output_text.delta'),
                           'response.output_text.done', 'response.content_part.done',
                           'response.output_item.done', end]);
  assert.equal(text, ref.choices[0].message.content);
  assert.equal(last.response.output[0].content[0].text, text);
  assert.equal(last.response.usage.output_tokens, ref.usage.completion_tokens);
});

test('text.format json_schema: the output is JSON of the schema', async () => {
  const schema = { type: 'object', properties: { name: { type: 'string', maxLength: 12 } },
                   required: ['name'], additionalProperties: false };
  const res = await client.responses.create({
    model: MODEL, input: 'Name a prophet', max_output_tokens: 40,
    text: { format: { type: 'json_schema', name: 'prophet', schema, strict: true } } });
  const value = JSON.parse(res.output_text);
  assert.deepEqual(Object.keys(value), ['name']);
  assert.equal(typeof value.name, 'string');
  assert.equal(res.text.format.type, 'json_schema');
});

test('refusals name the field', async () => {
  const refused = async (body, param, pattern) => {
    await assert.rejects(client.responses.create({ model: MODEL, input: 'x', ...body }), (e) => {
      assert.equal(e.status, 400, e.message);
      assert.equal(e.param, param);
      if (pattern) assert.match(e.message, pattern);
      return true;
    });
  };
  await refused({ store: 'yes' }, 'store');
  await refused({ previous_response_id: 7 }, 'previous_response_id');
  await refused({ reasoning: { effort: 'low' } }, 'reasoning');
  await refused({ tools: [{ type: 'web_search' }] }, 'tools', /web_search/);
  await refused({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] },
                'input');
  await refused({ input: [{ type: 'function_call_output', call_id: 'c' }] }, 'input', /output/);
  await refused({ max_output_tokens: 0 }, 'max_output_tokens');
  await assert.rejects(client.responses.create({ model: 'gpt-4.1', input: 'x' }),
                       (e) => e.status === 404 && e.code === 'model_not_found');
});

const metric = async (name, port = server.port) => {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  return Number(line.split(' ')[1]);
};

test('stored responses: retrieve, delete, then 404 in OpenAI\'s shape', async () => {
  const res = await client.responses.create({ model: MODEL, input: 'In the beginning',
                                              max_output_tokens: 3, temperature: 0 });
  assert.equal(res.store, true);
  const got = await client.responses.retrieve(res.id);
  assert.deepEqual(got, res);
  const deleted = await fetch(`http://127.0.0.1:${server.port}/v1/responses/${res.id}`,
                              { method: 'DELETE' });
  assert.equal(deleted.status, 200);
  assert.deepEqual(await deleted.json(), { deleted: true, id: res.id, object: 'response' });
  const other = await client.responses.create({ model: MODEL, input: 'x', max_output_tokens: 1 });
  await client.responses.delete(other.id);
  for (const call of [() => client.responses.retrieve(res.id),
                      () => client.responses.delete(res.id),
                      () => client.responses.retrieve('resp_unknown')]) {
    await assert.rejects(call(), (e) => {
      assert.equal(e.status, 404);
      assert.equal(e.type, 'invalid_request_error');
      assert.match(e.message, /not found/);
      return true;
    });
  }
  const unstored = await client.responses.create({ model: MODEL, input: 'x', store: false,
                                                   max_output_tokens: 1 });
  assert.equal(unstored.store, false);
  await assert.rejects(client.responses.retrieve(unstored.id), (e) => e.status === 404);
  await assert.rejects(
    client.responses.create({ model: MODEL, input: 'x', previous_response_id: unstored.id }),
    (e) => e.status === 400 && e.code === 'previous_response_not_found' &&
           e.param === 'previous_response_id');
});

const TURNS = ['Tell of the flood', 'And then?', 'Who was saved?', 'What came after?',
               'Say it again'];

// Each turn continues the previous response; the reference resends every
// message through chat completions. Greedy, so the texts must be equal.
const chain = async (stream, c = client, port = server.port) => {
  const messages = [{ role: 'system', content: INSTRUCTIONS }];
  let previous = null;
  for (const [i, turn] of TURNS.entries()) {
    messages.push({ role: 'user', content: turn });
    const reusedBefore = await metric('kvforge_prefix_cache_tokens_reused_total', port);
    const body = { model: MODEL, instructions: INSTRUCTIONS, input: turn, max_output_tokens: 8,
                   temperature: 0, previous_response_id: previous };
    let res;
    if (stream) {
      for await (const ev of await c.responses.create({ ...body, stream: true }))
        if (ev.type === 'response.completed' || ev.type === 'response.incomplete') res = ev.response;
    } else {
      res = await c.responses.create(body);
    }
    const reused = await metric('kvforge_prefix_cache_tokens_reused_total', port) - reusedBefore;
    // From turn 2 on, the history's full blocks (16 tokens) come from the prefix cache.
    if (i > 0) assert.ok(reused >= 16, `turn ${i + 1}: ${reused} tokens reused`);
    const ref = await c.chat.completions.create({ model: MODEL, max_tokens: 8,
                                                  temperature: 0, messages });
    const refText = ref.choices[0].message.content;
    assert.equal(res.output_text ?? res.output[0].content[0].text, refText, `turn ${i + 1}`);
    assert.equal(res.previous_response_id, previous);
    assert.equal(res.usage.input_tokens, ref.usage.prompt_tokens, `turn ${i + 1}`);
    messages.push({ role: 'assistant', content: refText });
    previous = res.id;
  }
};

test('previous_response_id: 5 turns equal chat completions resending everything', async () => {
  await chain(false);
});

test('previous_response_id, streamed: 5 turns equal chat completions', async () => {
  await chain(true);
});

// The model has no chat template, and the fallback's turns are plain text, so
// a SentencePiece vocabulary re-tokenizes them (responses_history.h). With a
// template ending each turn with the EOS token, the prompt starts with the
// stored token ids instead: the same equalities hold.
test('previous_response_id on stored token ids: 5 turns equal chat completions', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvforge-responses-template-'));
  const file = join(dir, 'turns.jinja');
  writeFileSync(file, '{% for m in messages %}{{ m.role }}: {{ m.content }}{{ eos_token }}' +
                      '{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}');
  const s = await startServer(['--chat-template', file]);
  try {
    await chain(false, new OpenAI({ baseURL: `http://127.0.0.1:${s.port}/v1`, apiKey: 'unused',
                                    maxRetries: 0 }), s.port);
  } finally {
    await stopServer(s.proc);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--kv-disk: stored responses survive a restart; a corrupt store file stops the start',
     async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvforge-responses-'));
  try {
    const clientOf = (s) => new OpenAI({ baseURL: `http://127.0.0.1:${s.port}/v1`,
                                         apiKey: 'unused', maxRetries: 0 });
    const first = await startServer(['--kv-disk', dir]);
    const a = clientOf(first);
    const one = await a.responses.create({ model: MODEL, input: TURNS[0], max_output_tokens: 6,
                                           temperature: 0 });
    const two = await a.responses.create({ model: MODEL, input: TURNS[1], max_output_tokens: 6,
                                           temperature: 0, previous_response_id: one.id });
    await stopServer(first.proc);
    const second = await startServer(['--kv-disk', dir]);
    try {
      const b = clientOf(second);
      assert.deepEqual(await b.responses.retrieve(one.id), one);
      const again = await b.responses.create({ model: MODEL, input: TURNS[1], max_output_tokens: 6,
                                               temperature: 0, previous_response_id: one.id });
      assert.equal(again.output_text, two.output_text);  // the same conversation after a restart
      // ... continued from the K/V the first process left in the disk tier, not recomputed.
      const cached = again.usage.input_tokens_details.cached_tokens;
      assert.ok(cached >= 16 && cached < again.usage.input_tokens, JSON.stringify(again.usage));
      const metrics = await (await fetch(`http://127.0.0.1:${second.port}/metrics`)).text();
      const diskHits = Number(/^kvforge_kv_tier_hits_total\{tier="disk"\} (\d+)$/m.exec(metrics)?.[1]);
      assert.ok(diskHits > 0, metrics.split('\n').filter((l) => /tier/.test(l)).join('\n'));
    } finally {
      await stopServer(second.proc);
    }
    const file = readdirSync(dir).find((f) => /^responses-[0-9a-f]{16}\.json$/.test(f));
    assert.ok(file, readdirSync(dir).join(' '));
    writeFileSync(join(dir, file), '{"kvforge_response_store": 1, "responses": [');
    await assert.rejects(startServer(['--kv-disk', dir]), (e) => {
      assert.match(e.message, new RegExp(`${file}: is corrupt`));
      return true;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const WEATHER = { type: 'function', name: 'get_weather', description: 'The weather in a city',
                  parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 16 } },
                                required: ['city'], additionalProperties: false } };

// A required call, its output sent back as function_call_output (with the call
// itself, and again through previous_response_id), streamed and not.
test('tools: function_call items, events, and the round trip back', async () => {
  // The tools' system prompt needs more than the model's own context of 256.
  const tooled = await startServer(['-c', '2048']);
  try {
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${tooled.port}/v1`, apiKey: 'unused',
                                maxRetries: 0 });
    await toolRoundTrip(client);
    await callCutOff(client);
  } finally {
    await stopServer(tooled.proc);
  }
});

async function toolRoundTrip(client) {
  const body = { model: MODEL, input: 'What is the weather in Paris?', tools: [WEATHER],
                 tool_choice: 'required', parallel_tool_calls: false,
                 max_output_tokens: 160, temperature: 0 };
  const res = await client.responses.create(body);
  assert.equal(res.output.length >= 1, true, JSON.stringify(res.output));
  const call = res.output[0];
  assert.equal(call.type, 'function_call');
  assert.equal(call.name, 'get_weather');
  assert.match(call.call_id, /^call_/);
  assert.equal(typeof JSON.parse(call.arguments).city, 'string');
  assert.equal(res.tools[0].name, 'get_weather');
  assert.equal(res.tool_choice, 'required');

  const types = [];
  let args = '';
  let last;
  let added;
  for await (const ev of await client.responses.create({ ...body, stream: true })) {
    types.push(ev.type);
    if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
    if (ev.type === 'response.output_item.added') added = ev.item;
    last = ev;
  }
  // The arguments stream in pieces as they are generated: one delta event per piece.
  const deltas = types.filter((t) => t === 'response.function_call_arguments.delta').length;
  assert.ok(deltas > 1, `arguments in ${deltas} pieces`);
  const pieces = types.filter((t, i) => t !== 'response.function_call_arguments.delta' ||
                                        types[i - 1] !== t);
  assert.deepEqual(pieces.slice(0, 6), ['response.created', 'response.in_progress',
    'response.output_item.added', 'response.function_call_arguments.delta',
    'response.function_call_arguments.done', 'response.output_item.done']);
  assert.equal(types.at(-1), 'response.completed');
  assert.equal(args, call.arguments);  // greedy: the same call streamed
  assert.equal(last.response.output[0].arguments, call.arguments);
  assert.equal(last.response.output[0].call_id, added.call_id, 'the streamed item is the final one');

  // The SDK's responses.stream helper assembles the same call from the events.
  const helper = client.responses.stream(body);
  let helperArgs = '';
  helper.on('response.function_call_arguments.delta', (ev) => { helperArgs += ev.delta; });
  const final = await helper.finalResponse();
  assert.equal(helperArgs, call.arguments);
  assert.equal(final.output[0].type, 'function_call');
  assert.equal(final.output[0].arguments, call.arguments);
  assert.equal(final.output[0].status, 'completed');

  const output = { type: 'function_call_output', call_id: call.call_id, output: '{"sky": "clear"}' };
  const resent = await client.responses.create({
    model: MODEL, tools: [WEATHER], tool_choice: 'none', max_output_tokens: 8, temperature: 0,
    input: [{ role: 'user', content: 'What is the weather in Paris?' },
            { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
            output] });
  assert.equal(resent.output[0].type, 'message');
  const chained = await client.responses.create({
    model: MODEL, tools: [WEATHER], tool_choice: 'none', max_output_tokens: 8, temperature: 0,
    previous_response_id: res.id, input: [output] });
  assert.equal(chained.output_text, resent.output_text);  // the stored call renders as resent
  const chat = await client.chat.completions.create({
    model: MODEL, max_tokens: 8, temperature: 0, tool_choice: 'none',
    tools: [{ type: 'function', function: { name: WEATHER.name, description: WEATHER.description,
                                            parameters: WEATHER.parameters } }],
    messages: [{ role: 'user', content: 'What is the weather in Paris?' },
               { role: 'assistant', content: null, tool_calls: [{ id: call.call_id, type: 'function',
                 function: { name: call.name, arguments: call.arguments } }] },
               { role: 'tool', tool_call_id: call.call_id, content: '{"sky": "clear"}' }] });
  assert.equal(resent.output_text, chat.choices[0].message.content);
}

// A call cut off by max_output_tokens, as OpenAI answers it: status incomplete with
// incomplete_details.reason max_output_tokens, the function_call item incomplete with the
// arguments generated so far, and no message holding the call's raw text; streamed, the
// call's events end in response.incomplete; the SDK's helper assembles the same response.
async function callCutOff(client) {
  const body = { model: MODEL, input: 'What is the weather in Paris?', tools: [WEATHER],
                 tool_choice: 'required', parallel_tool_calls: false,
                 max_output_tokens: 160, temperature: 0 };
  const whole = await client.responses.create(body);
  assert.equal(whole.status, 'completed');
  const full = whole.output[0].arguments;
  // The longest cut that ends inside the arguments (the call's own closing markup follows
  // them): a few requests back from the whole call's length.
  let cut;
  let res;
  for (let n = whole.usage.output_tokens - 1; n > 0 && !cut; --n) {
    res = await client.responses.create({ ...body, max_output_tokens: n });
    if (res.output[0]?.arguments?.length < full.length) cut = { ...body, max_output_tokens: n };
  }
  assert.ok(cut, 'a cut inside the arguments');
  const check = (res, how) => {
    assert.equal(res.status, 'incomplete', how);
    assert.deepEqual(res.incomplete_details, { reason: 'max_output_tokens' }, how);
    assert.equal(res.output.length, 1, `${how}: ${JSON.stringify(res.output)}`);
    const [item] = res.output;
    assert.equal(item.type, 'function_call', how);
    assert.equal(item.status, 'incomplete', how);
    assert.equal(item.name, 'get_weather', how);
    assert.ok(full.startsWith(item.arguments) && item.arguments.length > 0 &&
              item.arguments.length < full.length, `${how}: ${item.arguments} of ${full}`);
    assert.equal(res.usage.output_tokens, cut.max_output_tokens, how);
    return item;
  };
  const item = check(res, 'not streamed');

  const types = [];
  let args = '';
  let last;
  for await (const ev of await client.responses.create({ ...cut, stream: true })) {
    types.push(ev.type);
    if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
    if (ev.type === 'response.output_item.done') assert.equal(ev.item.status, 'incomplete');
    last = ev;
  }
  const pieces = types.filter((t, i) => t !== 'response.function_call_arguments.delta' ||
                                        types[i - 1] !== t);
  assert.deepEqual(pieces, ['response.created', 'response.in_progress',
    'response.output_item.added', 'response.function_call_arguments.delta',
    'response.function_call_arguments.done', 'response.output_item.done', 'response.incomplete']);
  const streamed = check(last.response, 'streamed');
  assert.equal(args, item.arguments);
  assert.equal(streamed.arguments, item.arguments);

  const final = await client.responses.stream(cut).finalResponse();
  assert.equal(check(final, 'the SDK helper').arguments, item.arguments);
}
