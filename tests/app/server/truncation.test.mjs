// Conversations longer than the context (issue 40) on the default model's
// 256-token context: OpenAI's 400 by default; "truncation": "auto" (or serve
// --truncate) drops the oldest turns, never the system message, says so in a
// header and in usage, and cuts a max_tokens beyond what is left (finish
// "length"). serve --context-shift lets a reply run past the context, with the
// tokens of `kvforge run --context-shift`. Run by run_ux_tests.sh (CTest: server_ux).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startServer, stopServer } from './serve_process.mjs';

let plain;      // kvforge serve
let truncating; // kvforge serve --truncate
let shifting;   // kvforge serve --context-shift

before(async () => {
  plain = await startServer(['-t', '1', '--no-access-log']);
  truncating = await startServer(['-t', '1', '--no-access-log', '--truncate']);
  shifting = await startServer(['-t', '1', '--no-access-log', '--context-shift']);
});
after(async () => {
  await stopServer(plain.proc);
  await stopServer(truncating.proc);
  await stopServer(shifting.proc);
});

const chat = (server, body) => fetch(`http://127.0.0.1:${server.port}/v1/chat/completions`, {
  method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

// A conversation of `turns` exchanges, each about 40 tokens, far over 256 in all, then a question.
function longConversation(turns) {
  const messages = [{ role: 'system', content: 'You are the scribe of the book.' }];
  for (let i = 0; i < turns; ++i) {
    messages.push({ role: 'user', content: `Tell me of the ${i}th day of the making.` });
    messages.push({ role: 'assistant',
                    content: 'And God said, Let there be light: and there was light, and God saw ' +
                             'the light, that it was good.' });
  }
  messages.push({ role: 'user', content: 'And the earth?' });
  return messages;
}

test('a conversation over the context is a 400 unless truncation is asked', async () => {
  const messages = longConversation(12);
  const refused = await chat(plain, { messages, max_tokens: 8 });
  assert.equal(refused.status, 400);
  assert.equal((await refused.json()).error.code, 'context_length_exceeded');
  const disabled = await chat(truncating, { messages, max_tokens: 8, truncation: 'disabled' });
  assert.equal(disabled.status, 400);
  const bad = await chat(plain, { messages, truncation: 'sometimes' });
  assert.equal(bad.status, 400);
  assert.match((await bad.json()).error.message, /truncation/);
});

test('truncation "auto" drops the oldest turns and says how many', async () => {
  const messages = longConversation(12);
  for (const [server, extra] of [[plain, { truncation: 'auto' }], [truncating, {}]]) {
    const res = await chat(server, { messages, max_tokens: 8, temperature: 0, ...extra });
    assert.equal(res.status, 200, await res.clone().text());
    const body = await res.json();
    const dropped = Number(res.headers.get('x-kvforge-truncated-messages'));
    assert.ok(dropped >= 2 && dropped % 2 === 0, `dropped ${dropped}`);
    assert.equal(body.usage.truncated_messages, dropped);
    assert.ok(body.usage.prompt_tokens + 8 <= 256, JSON.stringify(body.usage));
    assert.ok(body.choices[0].message.content.length > 0);
  }
  // The system message stays: a long one (about 150 tokens) is still in the trimmed prompt.
  const longSystem = 'You are the scribe of the book of the law. '.repeat(15);
  const kept = await (await chat(plain, {
    messages: [{ role: 'system', content: longSystem }, ...messages.slice(1)], max_tokens: 8,
    truncation: 'auto' })).json();
  assert.ok(kept.usage.truncated_messages >= 2, JSON.stringify(kept.usage));
  assert.ok(kept.usage.prompt_tokens > 140, JSON.stringify(kept.usage));
  // A conversation that fits is untouched: no header, no usage field.
  const short = await chat(truncating, { messages: longConversation(1), max_tokens: 8 });
  assert.equal(short.headers.get('x-kvforge-truncated-messages'), null);
  assert.equal((await short.json()).usage.truncated_messages, undefined);
});

test('with truncation, max_tokens beyond what is left ends at the context with "length"', async () => {
  const messages = [{ role: 'user', content: 'Who made the heaven?' }];
  const refused = await chat(plain, { messages, max_tokens: 1000 });
  assert.equal(refused.status, 400);
  const res = await chat(plain, { messages, max_tokens: 1000, truncation: 'auto', temperature: 0,
                                  ignore_eos: true });
  assert.equal(res.status, 200, await res.clone().text());
  const body = await res.json();
  assert.equal(body.choices[0].finish_reason, 'length');
  assert.equal(body.usage.prompt_tokens + body.usage.completion_tokens, 256);
});

test('streamed: the usage chunk reports the trim', async () => {
  const res = await chat(truncating, { messages: longConversation(12), max_tokens: 4, stream: true,
                                       stream_options: { include_usage: true } });
  assert.equal(res.status, 200);
  const text = await res.text();
  const usage = text.split('\n').filter((l) => l.startsWith('data: {'))
    .map((l) => JSON.parse(l.slice(6))).find((c) => c.usage).usage;
  assert.ok(usage.truncated_messages >= 2, JSON.stringify(usage));
});

test('serve --context-shift (or a request\'s context_shift): a reply runs past the context with the tokens of run', async () => {
  const prompt = 'In the beginning';
  const body = { prompt, max_tokens: 600, temperature: 0, ignore_eos: true };
  const completions = (server, extra = {}) => fetch(`http://127.0.0.1:${server.port}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...body, ...extra }) });
  const refused = await completions(plain);
  assert.equal(refused.status, 400, 'without --context-shift, max_tokens is bounded by the context');
  const res = await completions(shifting);
  assert.equal(res.status, 200, await res.clone().text());
  const reply = await res.json();
  assert.equal(reply.choices[0].finish_reason, 'length');
  assert.equal(reply.usage.completion_tokens, 600);
  // `kvforge run -q` prints the prompt, the text, then a newline.
  const run = execFileSync(process.env.KVFORGE_BIN,
    ['run', '-m', process.env.KVFORGE_MODEL, '-p', prompt, '-n', '600', '--temp', '0', '-q',
     '--ignore-eos', '--context-shift', '-c', '256', '-t', '1'], { encoding: 'utf8' });
  assert.equal(reply.choices[0].text, run.slice(prompt.length, -1));
  // Without max_tokens a reply still ends at the context's end: no shift, no endless reply.
  const unbounded = await (await fetch(`http://127.0.0.1:${shifting.port}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Who made the heaven?' }],
                           temperature: 0, ignore_eos: true }) })).json();
  assert.equal(unbounded.choices[0].finish_reason, 'length');
  assert.equal(unbounded.usage.prompt_tokens + unbounded.usage.completion_tokens, 256);
  // Per request: "context_shift" on a server started without the flag gives the same text.
  const asked = await completions(plain, { context_shift: true });
  assert.equal(asked.status, 200, await asked.clone().text());
  assert.equal((await asked.json()).choices[0].text, reply.choices[0].text);
  const metrics = await (await fetch(`http://127.0.0.1:${shifting.port}/metrics`)).text();
  const shifts = Number(/^kvforge_context_shifts_total (\S+)$/m.exec(metrics)[1]);
  assert.ok(shifts >= 3, `kvforge_context_shifts_total ${shifts}`);
});
