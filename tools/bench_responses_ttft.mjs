#!/usr/bin/env node
// Time to first token of turn N of a conversation kept as KV by the
// Responses API (previous_response_id) against a client resending the whole
// conversation to /v1/chat/completions, each on a server of its own (no
// shared prefix cache). Greedy; each turn's user input is a fixed text of
// about INPUT words, each reply MAX tokens. No dependencies beyond Node 18.
// Usage: bench_responses_ttft.mjs KVFORGE_BIN MODEL [TURNS=5] [MAX=64] [INPUT=40] [REPEAT=3]
import { spawn } from 'node:child_process';

const [bin, model, turns = '5', max = '64', input = '40', repeat = '3'] = process.argv.slice(2);
const TURNS = Number(turns), MAX = Number(max), WORDS = Number(input), REPEAT = Number(repeat);
const words = 'and the waters prevailed upon the earth an hundred and fifty days'.split(' ');
const userText = (turn) =>
  `Question ${turn}: ` + Array.from({ length: WORDS }, (_, i) => words[(i + turn) % words.length]).join(' ');

const start = (extra) => new Promise((resolve, reject) => {
  const proc = spawn(bin, ['serve', '-m', model, '--port', '0', '--no-access-log', '--any-model-name',
                           ...extra],
                     { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (d) => {
    log += d;
    const m = log.match(/listening on http:\/\/[\d.]+:(\d+)/);
    if (m) resolve({ proc, port: Number(m[1]) });
  });
  proc.on('exit', () => reject(new Error(log)));
});

// Streams one request; returns { ttft (s), text, id }.
async function streamed(port, path, body, onEvent) {
  const t0 = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const out = { ttft: null, text: '', id: null };
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const data = event.split('\n').find((l) => l.startsWith('data: '));
      if (!data || data === 'data: [DONE]') continue;
      const delta = onEvent(JSON.parse(data.slice(6)), out);
      if (delta && out.ttft === null) out.ttft = (performance.now() - t0) / 1000;
      if (delta) out.text += delta;
    }
  }
  return out;
}

async function responsesChain(port) {
  let previous = null;
  const ttfts = [], texts = [];
  for (let t = 1; t <= TURNS; ++t) {
    const r = await streamed(port, '/v1/responses', {
      model: 'x', input: userText(t), max_output_tokens: MAX, temperature: 0, stream: true,
      previous_response_id: previous }, (ev, out) => {
      if (ev.type === 'response.created') out.id = ev.response.id;
      return ev.type === 'response.output_text.delta' ? ev.delta : null;
    });
    previous = r.id;
    ttfts.push(r.ttft);
    texts.push(r.text);
  }
  return { ttfts, texts };
}

async function chatResend(port) {
  const messages = [];
  const ttfts = [], texts = [];
  for (let t = 1; t <= TURNS; ++t) {
    messages.push({ role: 'user', content: userText(t) });
    const r = await streamed(port, '/v1/chat/completions', {
      model: 'x', messages, max_tokens: MAX, temperature: 0, stream: true },
      (ev) => ev.choices?.[0]?.delta?.content || null);
    messages.push({ role: 'assistant', content: r.text });
    ttfts.push(r.ttft);
    texts.push(r.text);
  }
  return { ttfts, texts };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
// The chat client resending everything gets the prefix cache too, wherever
// the re-rendered history tokenizes back to the tokens computed; without it
// (--no-prefix-cache) it prefills the whole conversation.
const variants = [['responses', responsesChain, []], ['chat', chatResend, []],
                  ['chat-nocache', chatResend, ['--no-prefix-cache']]];
const runs = Object.fromEntries(variants.map(([name]) => [name, []]));
for (let i = 0; i < REPEAT; ++i) {
  // Alternating, each on a fresh server: none inherits another's cache.
  for (const [name, run, extra] of variants) {
    const s = await start(extra);
    try {
      runs[name].push(await run(s.port));
    } finally {
      s.proc.kill('SIGTERM');
      await new Promise((r) => s.proc.on('exit', r));
    }
  }
}
const last = TURNS - 1;
const turnMedian = (name, t) => median(runs[name].map((r) => r.ttfts[t]));
for (const [name] of variants)
  console.log(`${name.padEnd(12)} TTFT per turn (median of ${REPEAT}, ms): ` +
              Array.from({ length: TURNS }, (_, t) => (1000 * turnMedian(name, t)).toFixed(1))
                .join(' '));
for (const name of ['chat', 'chat-nocache'])
  console.log(`turn ${TURNS}: ${name} / previous_response_id = ` +
              `${(turnMedian(name, last) / turnMedian('responses', last)).toFixed(2)}x`);
// Greedy: every run of every variant must have written the same replies.
const reference = runs.responses[0].texts;
let differing = null;
for (const [name] of variants)
  runs[name].forEach((r, i) => r.texts.forEach((text, t) => {
    if (!differing && text !== reference[t]) differing = `${name} run ${i + 1} turn ${t + 1}`;
  }));
console.log(differing ? `greedy replies differ: ${differing}` :
            `greedy replies identical in all ${REPEAT * variants.length} runs ` +
            `(${reference.map((t) => t.length).join('+')} characters)`);
if (differing) process.exitCode = 1;
