// Anthropic's Messages API on `kvforge serve` (issue 41), driven by the
// @anthropic-ai/sdk client: messages.create streamed and not, greedy text
// equal to /v1/chat/completions, stop_sequences and stop_reason, usage,
// count_tokens, x-api-key, errors in Anthropic's shape (which the client
// turns into its typed errors), and tools: tool_use blocks streamed and not,
// and a round trip with tool_result rendered as the chat path renders it. Run by run_server_tests.sh (CTest: server_openai).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startServer, stopServer } from './serve_process.mjs';

const MODEL = 'kvforge-kjv-4m';
const KEY = 'k-anthropic';
let server;
let client;
let openai;

before(async () => {
  server = await startServer(['--max-seqs', '4', '--api-key', KEY, '-c', '1024']);
  const base = `http://127.0.0.1:${server.port}`;
  client = new Anthropic({ baseURL: base, apiKey: KEY, maxRetries: 0 });  // sends x-api-key
  openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0 });
});

after(async () => { await stopServer(server.proc); });

// The whole prompt: Anthropic's input_tokens counts only what was not read from a cache.
const promptTokens = (u) => u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;

const SYSTEM = 'Answer in the words of the King James Bible.';
const MESSAGES = [{ role: 'user', content: 'Tell of the flood' },
                  { role: 'assistant', content: [{ type: 'text', text: 'The waters rose.' }] },
                  { role: 'user', content: [{ type: 'text', text: 'And then?' }] }];
const reference = (max, stop) => openai.chat.completions.create({
  model: MODEL, max_tokens: max, temperature: 0, stop,
  messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'Tell of the flood' },
             { role: 'assistant', content: 'The waters rose.' }, { role: 'user', content: 'And then?' }],
});

test('messages.create: greedy text, stop_reason and usage equal chat completions', async () => {
  const ref = await reference(12);
  const msg = await client.messages.create({ model: MODEL, max_tokens: 12, temperature: 0,
                                             system: SYSTEM, messages: MESSAGES });
  assert.equal(msg.type, 'message');
  assert.equal(msg.role, 'assistant');
  assert.match(msg.id, /^msg_/);
  assert.equal(msg.content[0].type, 'text');
  assert.equal(msg.content[0].text, ref.choices[0].message.content);
  assert.equal(msg.stop_reason, ref.choices[0].finish_reason === 'length' ? 'max_tokens' : 'end_turn');
  assert.equal(promptTokens(msg.usage), ref.usage.prompt_tokens);
  assert.equal(msg.usage.output_tokens, ref.usage.completion_tokens);
  const count = await client.messages.countTokens({ model: MODEL, system: SYSTEM, messages: MESSAGES });
  assert.equal(count.input_tokens, ref.usage.prompt_tokens);
});

test('stop_sequences: stop_reason stop_sequence names the one that matched', async () => {
  const free = await client.messages.create({ model: MODEL, max_tokens: 40, temperature: 0,
                                              system: SYSTEM, messages: MESSAGES });
  const text = free.content[0].text;
  const word = text.trim().split(/\s+/)[1];  // a word the greedy text reaches
  assert.ok(word, text);
  const msg = await client.messages.create({ model: MODEL, max_tokens: 40, temperature: 0,
                                             system: SYSTEM, messages: MESSAGES,
                                             stop_sequences: ['zzzz', word] });
  assert.equal(msg.stop_reason, 'stop_sequence');
  assert.equal(msg.stop_sequence, word);
  assert.equal(msg.content[0].text, text.slice(0, text.indexOf(word)));
});

test('streaming: message_start .. message_stop, deltas adding up to the text', async () => {
  const ref = await reference(12);
  const stream = await client.messages.create({ model: MODEL, max_tokens: 12, temperature: 0,
                                                system: SYSTEM, messages: MESSAGES, stream: true });
  const types = [];
  let text = '';
  let stop;
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'content_block_delta') text += event.delta.text;
    if (event.type === 'message_delta') stop = event;
  }
  const deltas = types.filter((t) => t === 'content_block_delta').length;
  assert.deepEqual(types, ['message_start', 'content_block_start',
                           ...Array(deltas).fill('content_block_delta'),
                           'content_block_stop', 'message_delta', 'message_stop']);
  assert.equal(text, ref.choices[0].message.content);
  assert.equal(stop.usage.output_tokens, ref.usage.completion_tokens);
  // The SDK's helper assembles the same message.
  const final = await client.messages.stream({ model: MODEL, max_tokens: 12, temperature: 0,
                                              system: SYSTEM, messages: MESSAGES }).finalMessage();
  assert.equal(final.content[0].text, text);
  assert.equal(promptTokens(final.usage), ref.usage.prompt_tokens);
});

test("errors have Anthropic's shape: the client's typed errors", async () => {
  const refused = async (body, Type, pattern) => {
    await assert.rejects(client.messages.create({ model: MODEL, max_tokens: 8,
                                                  messages: [{ role: 'user', content: 'hi' }],
                                                  ...body }), (e) => {
      assert.ok(e instanceof Type, `${e.constructor.name}: ${e.message}`);
      assert.equal(e.error?.type, 'error');
      if (pattern) assert.match(e.message, pattern);
      return true;
    });
  };
  await refused({ max_tokens: undefined }, Anthropic.BadRequestError, /max_tokens/);
  await refused({ tools: [{ name: 'f', input_schema: { type: 'array' } }] },
                Anthropic.BadRequestError, /tools/);
  await refused({ tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
                Anthropic.BadRequestError, /server tools/);
  await refused({ tools: [WEATHER], tool_choice: { type: 'tool', name: 'nope' } },
                Anthropic.BadRequestError, /tool_choice/);
  await refused({ tools: [WEATHER], tool_choice: { type: 'sometimes' } },
                Anthropic.BadRequestError, /tool_choice/);
  await refused({ messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] },
                Anthropic.BadRequestError, /image/);
  await refused({ model: 'claude-sonnet-4' }, Anthropic.NotFoundError, /claude-sonnet-4/);
  const stranger = new Anthropic({ baseURL: client.baseURL, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(stranger.messages.create({ model: MODEL, max_tokens: 8,
                                                  messages: [{ role: 'user', content: 'hi' }] }),
                       (e) => e instanceof Anthropic.AuthenticationError);
});

// Tools (anthropic_blocks.h): the same calls the chat path makes, in Anthropic's shapes.
const WEATHER = {
  name: 'get_weather', description: 'The weather in a city',
  input_schema: { type: 'object', additionalProperties: false, required: ['city', 'unit'],
                  properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['c', 'f'] } } },
};
const ASK = [{ role: 'user', content: 'What is the weather in Paris?' }];
const checkWeather = (block) => {
  assert.equal(block.type, 'tool_use');
  assert.match(block.id, /^toolu_[0-9a-f]{24}$/);
  assert.equal(block.name, 'get_weather');
  assert.deepEqual(Object.keys(block.input).sort(), ['city', 'unit']);
  assert.equal(typeof block.input.city, 'string');
  assert.ok(['c', 'f'].includes(block.input.unit), JSON.stringify(block.input));
};

test('tools: a tool_use reply, streamed and not, and a tool_result round trip', async () => {
  const ask = { model: MODEL, max_tokens: 400, temperature: 0, tools: [WEATHER], messages: ASK,
                tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true } };
  const msg = await client.messages.create(ask);
  assert.equal(msg.stop_reason, 'tool_use');
  assert.equal(msg.content.length, 1, JSON.stringify(msg.content));
  checkWeather(msg.content[0]);
  const count = await client.messages.countTokens({ model: MODEL, tools: [WEATHER], messages: ASK,
                                                    tool_choice: ask.tool_choice });
  assert.equal(count.input_tokens, promptTokens(msg.usage));

  // Streamed: a tool_use block whose input comes in input_json_delta pieces; greedy, so the same call.
  const types = [];
  let pieces = 0;
  const stream = client.messages.stream(ask);
  stream.on('streamEvent', (e) => {
    types.push(e.type === 'content_block_start' ? `start:${e.content_block.type}` : e.type);
    if (e.type === 'content_block_delta') {
      assert.equal(e.delta.type, 'input_json_delta');
      ++pieces;
    }
  });
  const streamed = await stream.finalMessage();
  assert.equal(streamed.stop_reason, 'tool_use');
  checkWeather(streamed.content[0]);
  assert.deepEqual(streamed.content[0].input, msg.content[0].input);
  assert.ok(pieces > 1, `input came in ${pieces} pieces`);
  assert.deepEqual(types.filter((t) => t !== 'content_block_delta'),
                   ['message_start', 'start:tool_use', 'content_block_stop', 'message_delta',
                    'message_stop']);

  // The round trip: the call and its result go back; the prompt is what chat completions renders.
  const call = msg.content[0];
  const answer = await client.messages.create({
    model: MODEL, max_tokens: 8, temperature: 0, tools: [WEATHER], tool_choice: { type: 'none' },
    messages: [...ASK, { role: 'assistant', content: [{ type: 'text', text: 'Let me look.' }, call] },
               { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id,
                                            content: [{ type: 'text', text: '21 degrees' }] },
                                          { type: 'text', text: 'Thanks.' }] }] });
  const ref = await openai.chat.completions.create({
    model: MODEL, max_tokens: 8, temperature: 0, tool_choice: 'none',
    tools: [{ type: 'function', function: { name: WEATHER.name, description: WEATHER.description,
                                            parameters: WEATHER.input_schema } }],
    messages: [...ASK,
               { role: 'assistant', content: 'Let me look.', tool_calls: [{ id: call.id, type: 'function',
                 function: { name: call.name, arguments: JSON.stringify(call.input) } }] },
               { role: 'tool', tool_call_id: call.id, content: '21 degrees' },
               { role: 'user', content: 'Thanks.' }] });
  assert.equal(promptTokens(answer.usage), ref.usage.prompt_tokens);
  assert.equal(answer.content[0].type, 'text');
  assert.equal(answer.content[0].text, ref.choices[0].message.content);
  assert.notEqual(answer.stop_reason, 'tool_use');
});

test('tools: tool_choice any with disable_parallel_tool_use gives one call', async () => {
  const msg = await client.messages.create({
    model: MODEL, max_tokens: 400, temperature: 1, tools: [WEATHER], messages: ASK,
    tool_choice: { type: 'any', disable_parallel_tool_use: true } });
  assert.equal(msg.stop_reason, 'tool_use');
  assert.equal(msg.content.length, 1);
  checkWeather(msg.content[0]);
});
