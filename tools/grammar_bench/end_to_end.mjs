// End-to-end decode throughput of a running `kvforge serve` with and without
// a JSON schema: CLIENTS concurrent /v1/completions requests of MAX_TOKENS
// tokens each, constrained (llama-server's json_schema field) and not
// (ignore_eos), alternating, ROUNDS of each; prints one JSON line per round
// and the medians, and the ratio of each pair of rounds. Usage:
//   node tools/grammar_bench/end_to_end.mjs BASE_URL SCHEMA_FILE [clients=16] [max_tokens=96] [rounds=3]
import { readFileSync } from 'node:fs';

const [base, schemaFile, clients = '16', maxTokens = '96', rounds = '3'] = process.argv.slice(2);
if (!base || !schemaFile) throw new Error('usage: end_to_end.mjs BASE_URL SCHEMA_FILE [clients] [max_tokens] [rounds]');
const schema = JSON.parse(readFileSync(schemaFile, 'utf8'));

async function round(constrained, r) {
  let tokens = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Number(clients) }, async (_, c) => {
    const body = { prompt: `Record ${c} of round ${r}:`, max_tokens: Number(maxTokens),
      temperature: 1, seed: 1000 * r + c };
    if (constrained) body.json_schema = schema; else body.ignore_eos = true;
    const res = await fetch(`${base}/v1/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const j = await res.json();
    if (res.status !== 200) throw new Error(JSON.stringify(j));
    tokens += j.usage.completion_tokens;
  }));
  const seconds = (performance.now() - t0) / 1000;
  return { constrained, tokens, seconds: +seconds.toFixed(3), tokens_per_s: +(tokens / seconds).toFixed(1) };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
await round(false, 0);  // warm-up: the grammar cache and the first mask are per schema
await round(true, 0);
const seen = { true: [], false: [] };
for (let r = 1; r <= Number(rounds); ++r) {
  for (const constrained of [false, true]) {
    const out = await round(constrained, r);
    seen[constrained].push(out.tokens_per_s);
    console.log(JSON.stringify(out));
  }
}
const free = median(seen.false), json = median(seen.true);
// Each constrained round over the unconstrained one just before it: the
// machine's load drifts over minutes, less within a pair.
const pairs = seen.true.map((t, i) => +(t / seen.false[i]).toFixed(3));
console.log(JSON.stringify({ clients: Number(clients), max_tokens: Number(maxTokens),
  unconstrained_tokens_per_s: free, constrained_tokens_per_s: json, ratio: +(json / free).toFixed(3),
  pair_ratios: pairs, median_pair_ratio: median(pairs) }));
