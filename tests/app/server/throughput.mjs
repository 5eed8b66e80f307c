// Throughput of a running `kvforge serve`: C concurrent clients each send
// completions back to back for D seconds; prints requests/s and generated tokens/s.
// Usage: node throughput.mjs BASE_URL [clients=16] [seconds=20] [max_tokens=64]
const [base, clients = '16', seconds = '20', maxTokens = '64'] = process.argv.slice(2);
const end = Date.now() + Number(seconds) * 1000;
let requests = 0, tokens = 0, errors = 0;
const t0 = Date.now();
await Promise.all(Array.from({ length: Number(clients) }, async (_, c) => {
  for (let i = 0; Date.now() < end; i++) {
    const res = await fetch(`${base}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: `Once upon a time ${c} ${i}`, max_tokens: Number(maxTokens),
                             temperature: 0.8, seed: c * 1000 + i, ignore_eos: true }) });
    const j = await res.json();
    if (res.status !== 200) { errors++; continue; }
    requests++;
    tokens += j.usage.completion_tokens;
  }
}));
const s = (Date.now() - t0) / 1000;
console.log(JSON.stringify({ clients: Number(clients), seconds: s, requests, errors,
  requests_per_s: +(requests / s).toFixed(2), tokens_per_s: +(tokens / s).toFixed(1) }));
