#!/usr/bin/env node
// How much a burst of embedding requests delays a streaming chat: starts
// `kvforge serve`, streams one greedy chat of 120 tokens, and after its 10th
// chunk sends 64 embedding requests of about WORDS words each at once. Prints
// the chat's median, p99 and longest gap between chunks and how long the 64
// embeddings took. Run it against two builds, alternating, to compare.
// Usage: bench_embeddings_beside_chat.mjs KVFORGE_BIN MODEL [WORDS=90] [ROUNDS=2]
import { spawn } from 'node:child_process';

const [bin, model, words = '90', rounds = '2'] = process.argv.slice(2);
if (!bin || !model) {
  console.error('usage: bench_embeddings_beside_chat.mjs KVFORGE_BIN MODEL [WORDS=90] [ROUNDS=2]');
  process.exit(2);
}
const verse = 'and the waters prevailed upon the earth an hundred and fifty days ';
const text = (i) => `${i} ` + verse.repeat(Math.ceil(Number(words) / 12));

const start = () => new Promise((resolve, reject) => {
  const proc = spawn(bin, ['serve', '-m', model, '--port', '0', '--no-access-log', '--any-model-name'],
                     { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (d) => {
    log += d;
    const m = log.match(/listening on http:\/\/[\d.]+:(\d+)/);
    if (m) resolve({ proc, port: Number(m[1]) });
  });
  proc.on('exit', () => reject(new Error(log)));
});

const post = (base, path, body) => fetch(`${base}${path}`, {
  method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
});

async function round() {
  const server = await start();
  const base = `http://127.0.0.1:${server.port}`;
  try {
    const res = await post(base, '/v1/chat/completions', {
      model: 'm', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 120,
      temperature: 0, stream: true });
    const reader = res.body.getReader();
    const gaps = [];
    let last = 0, chunks = 0, embeddings;
    for (;;) {
      const { done } = await reader.read();
      if (done) break;
      const now = performance.now();
      if (last) gaps.push(now - last);
      last = now;
      if (++chunks === 10) {
        const t0 = performance.now();
        embeddings = Promise.all(Array.from({ length: 64 }, (_, i) =>
          post(base, '/v1/embeddings', { model: 'm', input: text(i) }).then((r) => {
            if (!r.ok) throw new Error(`embeddings: HTTP ${r.status}`);
            return r.json();
          }))).then(() => performance.now() - t0);
      }
    }
    const embedMs = await embeddings;
    gaps.sort((a, b) => a - b);
    const at = (q) => gaps[Math.min(gaps.length - 1, Math.floor(gaps.length * q))].toFixed(1);
    console.log(`chat gaps: median ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${gaps.at(-1).toFixed(1)} ms;` +
                ` 64 embeddings took ${embedMs.toFixed(0)} ms`);
  } finally {
    server.proc.kill('SIGTERM');
  }
}

for (let r = 0; r < Number(rounds); ++r) await round();
