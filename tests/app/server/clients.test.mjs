// Structured output and tool calls through the client libraries apps are
// built on (issue 39), against `kvforge serve`'s chat completions: the
// Vercel AI SDK (generateObject with a zod schema, generateText with a tool,
// through @ai-sdk/openai-compatible and @ai-sdk/openai's chat model) and
// LangChain (ChatOpenAI's withStructuredOutput by json schema and by
// function calling, bindTools; useResponsesApi against the chat reference,
// issue 41). The default model has no chat template, so tools take the
// generic form. KVFORGE_BIN, KVFORGE_MODEL from the environment.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { generateObject, generateText, tool } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { startServer, stopServer } from './serve_process.mjs';

let server, base;
before(async () => {
  server = await startServer(['-c', '2048', '--alias', 'kvforge']);
  base = `http://127.0.0.1:${server.port}/v1`;
});
after(async () => { if (server) await stopServer(server.proc); });

// Bounded strings and lists: a model that never closes a quote by choice still ends.
const Event = z.object({
  name: z.string().max(10),
  day: z.enum(['mon', 'tue', 'wed']),
  guests: z.array(z.string().max(8)).max(3),
});
const Weather = z.object({ city: z.string().max(12), unit: z.enum(['c', 'f']) });
const prompt = 'Plan an event.';

function models() {
  const compatible = createOpenAICompatible({
    name: 'kvforge', baseURL: base, apiKey: 'none', supportsStructuredOutputs: true });
  const openai = createOpenAI({ baseURL: base, apiKey: 'none' });
  return { 'openai-compatible': compatible.chatModel('kvforge'), openai: openai.chat('kvforge') };
}


test('AI SDK generateObject with a zod schema, both providers', async () => {
  for (const [name, model] of Object.entries(models())) {
    const { object, finishReason } = await generateObject({
      model, schema: Event, prompt, seed: 3, maxRetries: 0 });
    assert.ok(Event.safeParse(object).success, `${name}: ${JSON.stringify(object)}`);
    assert.equal(finishReason, 'stop', name);
  }
});

test('AI SDK generateText with a required tool, both providers: the tool runs', async () => {
  for (const [name, model] of Object.entries(models())) {
    const calls = [];
    const result = await generateText({
      model, prompt: 'Weather in Paris?', seed: 5, maxRetries: 0, toolChoice: 'required',
      tools: {
        weather: tool({
          description: 'The weather in a city',
          inputSchema: Weather,
          execute: async (input) => { calls.push(input); return { temperature: 21 }; },
        }),
      },
    });
    assert.ok(calls.length >= 1, `${name}: ${JSON.stringify(result.steps.at(-1)?.content)}`);
    for (const c of calls) assert.ok(Weather.safeParse(c).success, JSON.stringify(c));
    assert.equal(result.steps[0].finishReason, 'tool-calls', name);
    assert.equal(result.toolResults[0].output.temperature, 21);
  }
});

test('LangChain withStructuredOutput: jsonSchema and functionCalling', async () => {
  const llm = new ChatOpenAI({
    model: 'kvforge', apiKey: 'none', configuration: { baseURL: base }, maxRetries: 0, seed: 2 });
  for (const method of ['jsonSchema', 'functionCalling']) {
    const out = await llm.withStructuredOutput(Event, { method }).invoke(prompt);
    assert.ok(Event.safeParse(out).success, `${method}: ${JSON.stringify(out)}`);
  }
});

test('LangChain bindTools: the reply carries a valid tool call', async () => {
  const llm = new ChatOpenAI({
    model: 'kvforge', apiKey: 'none', configuration: { baseURL: base }, maxRetries: 0, seed: 4 });
  const bound = llm.bindTools(
    [{ name: 'weather', description: 'The weather in a city', schema: Weather }],
    { tool_choice: 'required' });
  const msg = await bound.invoke('Weather in Paris?');
  assert.ok(msg.tool_calls.length >= 1, JSON.stringify(msg));
  for (const c of msg.tool_calls) {
    assert.equal(c.name, 'weather');
    assert.match(c.id, /^call_/);
    assert.ok(Weather.safeParse(c.args).success, JSON.stringify(c.args));
  }
});

// ChatOpenAI({ useResponsesApi: true }) speaks /v1/responses: greedy, its text
// equals the chat completions route's on the same conversation, invoked and
// streamed, and its usage is the route's.
test('LangChain useResponsesApi: invoke and stream equal chat completions', async () => {
  const messages = [['system', 'Answer in the words of the King James Bible.'],
                    ['human', 'Tell of the flood']];
  const options = { model: 'kvforge', apiKey: 'none', configuration: { baseURL: base },
                    maxRetries: 0, temperature: 0, maxTokens: 12 };
  const ref = await new ChatOpenAI(options).invoke(messages);
  const llm = new ChatOpenAI({ ...options, useResponsesApi: true });
  const invoked = await llm.invoke(messages);
  assert.match(invoked.response_metadata.id, /^resp_/);
  assert.equal(invoked.text, ref.text);
  assert.ok(ref.text.length > 0);
  assert.deepEqual(
    [invoked.usage_metadata.input_tokens, invoked.usage_metadata.output_tokens],
    [ref.usage_metadata.input_tokens, ref.usage_metadata.output_tokens]);
  let streamed;
  let pieces = 0;
  for await (const chunk of await llm.stream(messages)) {
    streamed = streamed ? streamed.concat(chunk) : chunk;
    if (chunk.text) ++pieces;
  }
  assert.equal(streamed.text, ref.text);
  assert.ok(pieces > 1, `streamed in ${pieces} pieces`);
  assert.equal(streamed.usage_metadata.output_tokens, ref.usage_metadata.output_tokens);
  assert.equal(streamed.usage_metadata.input_tokens, ref.usage_metadata.input_tokens);
});
