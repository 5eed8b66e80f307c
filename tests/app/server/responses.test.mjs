// OpenAI's Responses API on `kvforge serve` (issue 41), driven by the openai
// client's responses.create, streamed and not: greedy text equal to
// /v1/chat/completions on the same conversation, the documented event
// sequence, text.format json_schema through the grammar, and the refusals
// (previous_response_id: responses are not stored). Run by
// run_server_tests.sh (CTest: server_openai).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
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

test('refusals name the field; previous_response_id says responses are not stored', async () => {
  const refused = async (body, param, pattern) => {
    await assert.rejects(client.responses.create({ model: MODEL, input: 'x', ...body }), (e) => {
      assert.equal(e.status, 400, e.message);
      assert.equal(e.param, param);
      if (pattern) assert.match(e.message, pattern);
      return true;
    });
  };
  await refused({ previous_response_id: 'resp_123' }, 'previous_response_id', /not store/);
  await refused({ store: true }, 'store');
  await refused({ reasoning: { effort: 'low' } }, 'reasoning');
  await refused({ tools: [{ type: 'function', name: 'f', parameters: {} }] }, 'tools');
  await refused({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] },
                'input');
  await refused({ input: [{ type: 'function_call_output', call_id: 'c', output: 'x' }] }, 'input');
  await refused({ max_output_tokens: 0 }, 'max_output_tokens');
  await assert.rejects(client.responses.create({ model: 'gpt-4.1', input: 'x' }),
                       (e) => e.status === 404 && e.code === 'model_not_found');
});
