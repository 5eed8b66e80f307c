// gpt-oss's tool calls under tool_choice "required" and a named function
// (issue 39): the reply is constrained to a harmony message to
// functions.NAME, its markers (<|channel|>, <|constrain|>, <|message|>,
// <|call|>) as special tokens, so on a random-weight gpt-oss model (the worst
// case: the model wants garbage) every reply is one call whose arguments
// validate against the function's schema (ajv), plain and streamed.
// KVFORGE_BIN from the environment; KVFORGE_MODEL a gpt-oss file whose
// vocabulary has harmony's markers (run_server_tests.sh makes one).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import Ajv2020 from 'ajv/dist/2020.js';
import { startServer, stopServer } from './serve_process.mjs';
import { weather, add as plainAdd } from './tool_fixtures.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ajv = new Ajv2020({ strict: false });
// gpt-oss's template writes every function's description.
const add = { ...plainAdd, function: { ...plainAdd.function, description: 'Adds two numbers' } };
const tools = [weather, add];
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];

let server;
let client;
before(async () => {
  server = await startServer(['-c', '2048', '--chat-template',
    path.join(here, '../chat/data/openai-gpt-oss-120b.jinja')]);
  client = new OpenAI({ baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: 'none', maxRetries: 0 });
});
after(async () => { await stopServer(server.proc); });

function checkCall(choice, allowed) {
  assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
  assert.equal(choice.message.tool_calls.length, 1, JSON.stringify(choice.message));
  const call = choice.message.tool_calls[0];
  const tool = allowed.find((t) => t.function.name === call.function.name);
  assert.ok(tool, `called ${call.function.name}`);
  const validate = ajv.compile(tool.function.parameters);
  assert.ok(validate(JSON.parse(call.function.arguments)),
    `${call.function.arguments}: ${JSON.stringify(validate.errors)}`);
  return call;
}

test('gpt-oss: tool_choice required, n = 3, sampled: every reply is one valid call', async () => {
  for (const seed of [1, 2]) {
    const r = await client.chat.completions.create({
      messages, tools, tool_choice: 'required', n: 3, temperature: 1, seed, max_tokens: 200 });
    assert.equal(r.choices.length, 3);
    for (const c of r.choices) checkCall(c, tools);
  }
});

test('gpt-oss: a named function is the one called, plain and streamed alike', async () => {
  const body = { messages, tools, temperature: 1, seed: 3, max_tokens: 200,
    tool_choice: { type: 'function', function: { name: 'add' } } };
  const r = await client.chat.completions.create(body);
  const call = checkCall(r.choices[0], [add]);
  const done = await client.chat.completions.stream(body).finalChatCompletion();
  assert.deepEqual(checkCall(done.choices[0], [add]).function, call.function);
});
