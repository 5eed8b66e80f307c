// llama-server's slot save and restore (issue 41): `serve --slot-save-path DIR`,
// POST /slots/{id}?action=save|restore {"filename"}. A saved conversation restored
// into a restarted server makes the same request a prefix-cache hit (cached_tokens)
// with the same greedy text; hostile files are refused naming why: bad names,
// a missing file, a corrupt or truncated one, another model's. erase forgets what a
// slot holds. The static slots save and restore too (the same files). Without the flag
// both actions are a 501 naming it. Run by run_server_tests.sh (CTest: server_apis).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, stopServer } from './serve_process.mjs';

const BLOCK = 16;
const dir = mkdtempSync(join(tmpdir(), 'kvforge-slots-'));
const slotDir = join(dir, 'slots');
const ARGS = ['--max-seqs', '2', '-c', '512', '--block-size', String(BLOCK), '--slot-save-path', slotDir];
const MESSAGES = [{ role: 'system', content: 'Thou art a scribe of the chronicles; answer in the ' +
                    'words of the King James Bible, with verses of the prophets, and keep it short.' },
                  { role: 'user', content: 'Who built the wall of Jerusalem?' }];
let server;

before(async () => { server = await startServer(ARGS); });
after(async () => {
  await stopServer(server.proc);
  rmSync(dir, { recursive: true, force: true });
});

const base = () => `http://127.0.0.1:${server.port}`;
async function post(path, body, at = base()) {
  const res = await fetch(at + path, { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                       body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}
const chat = (at) => post('/v1/chat/completions', { messages: MESSAGES, max_tokens: 6, temperature: 0 }, at);

test('save, restart, restore: the next request is a prefix-cache hit with the same text', async () => {
  const first = await chat();
  assert.equal(first.status, 200);
  assert.equal(first.body.usage.prompt_tokens_details.cached_tokens, 0);
  const saved = await post('/slots/0?action=save', { filename: 'chronicles.bin' });
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  assert.equal(saved.body.id_slot, 0);
  assert.equal(saved.body.filename, 'chronicles.bin');
  assert.ok(saved.body.n_saved >= BLOCK && saved.body.n_saved % BLOCK === 0, JSON.stringify(saved.body));
  assert.equal(saved.body.n_written, statSync(join(slotDir, 'chronicles.bin')).size);
  assert.equal(typeof saved.body.timings.save_ms, 'number');

  await stopServer(server.proc);
  server = await startServer(ARGS);  // an empty prefix cache
  const restored = await post('/slots/1?action=restore', { filename: 'chronicles.bin' });
  assert.equal(restored.status, 200, JSON.stringify(restored.body));
  assert.equal(restored.body.id_slot, 1);
  assert.equal(restored.body.n_restored, saved.body.n_saved);
  assert.equal(restored.body.n_read, saved.body.n_written);
  assert.equal(typeof restored.body.timings.restore_ms, 'number');
  const again = await chat();
  const prompt = again.body.usage.prompt_tokens;
  // Whole blocks of the prompt, never its last token, as far as the file reaches.
  const expected = Math.min(restored.body.n_restored, Math.floor((prompt - 1) / BLOCK) * BLOCK);
  assert.ok(expected > 0);
  assert.equal(again.body.usage.prompt_tokens_details.cached_tokens, expected);
  assert.equal(again.body.choices[0].message.content, first.body.choices[0].message.content);
  // A restored slot saves again what it holds.
  const resaved = await post('/slots/1?action=save', { filename: 'copy.bin' });
  assert.equal(resaved.body.n_saved, restored.body.n_restored);
  assert.deepEqual(readFileSync(join(slotDir, 'copy.bin')), readFileSync(join(slotDir, 'chronicles.bin')));
});

// erase forgets what the slot holds: GET /slots shows it empty and the same request is
// computed afresh (no cached tokens), with the same greedy text.
test('erase: /slots shows the slot empty, the next request is no prefix-cache hit', async () => {
  const messages = [{ role: 'system', content: 'Thou art a scribe of the kings of Judah; answer ' +
                      'in the words of the King James Bible and name the kings in their order.' },
                    { role: 'user', content: 'Who reigned after Solomon?' }];
  const ask = () => post('/v1/chat/completions', { messages, max_tokens: 4, temperature: 0 });
  const slots = async () => (await fetch(`${base()}/slots`)).json();
  const first = await ask();
  assert.equal(first.body.usage.prompt_tokens_details.cached_tokens, 0);
  const held = (await slots())[0].n_prompt_tokens;  // the prompt and the reply's tokens
  assert.ok(held >= first.body.usage.prompt_tokens, `slot 0 holds ${held}`);
  const hit = await ask();
  assert.ok(hit.body.usage.prompt_tokens_details.cached_tokens >= BLOCK, JSON.stringify(hit.body.usage));
  const erased = await post('/slots/0?action=erase', {});
  assert.deepEqual(erased, { status: 200, body: { id_slot: 0, n_erased: held } });
  assert.equal((await slots())[0].n_prompt_tokens, 0);
  const saved = await post('/slots/0?action=save', { filename: 'erased.bin' });
  assert.equal(saved.body.n_saved, 0, JSON.stringify(saved.body));  // nothing left to save
  const after = await ask();
  assert.equal(after.body.usage.prompt_tokens_details.cached_tokens, 0);
  assert.equal(after.body.choices[0].message.content, first.body.choices[0].message.content);
});

test('hostile names and files are refused naming why', async () => {
  await chat();
  assert.equal((await post('/slots/0?action=save', { filename: 'good.bin' })).status, 200);
  const good = readFileSync(join(slotDir, 'good.bin'));
  const refused = async (filename, status, pattern) => {
    const r = await post('/slots/0?action=restore', { filename });
    assert.equal(r.status, status, `${filename}: ${JSON.stringify(r.body)}`);
    assert.match(r.body.error.message, pattern);
  };
  for (const name of ['../good.bin', 'a/b.bin', '..', 'a\\b', '']) {
    assert.equal((await post('/slots/0?action=save', { filename: name })).status, 400, name);
    await refused(name, 400, /filename/);
  }
  await refused('missing.bin', 404, /no slot file 'missing.bin'/);
  const corrupt = Buffer.from(good);
  corrupt[corrupt.length - 100] ^= 0x20;  // inside the last block's payload
  writeFileSync(join(slotDir, 'corrupt.bin'), corrupt);
  await refused('corrupt.bin', 400, /block \d+: checksum/);
  writeFileSync(join(slotDir, 'truncated.bin'), good.subarray(0, good.length - 7));
  await refused('truncated.bin', 400, /truncated/);
  writeFileSync(join(slotDir, 'text.bin'), 'In the beginning God created the heaven and the earth.');
  await refused('text.bin', 400, /not a kvforge slot file/);
  symlinkSync(join(slotDir, 'good.bin'), join(slotDir, 'link.bin'));
  await refused('link.bin', 400, /not a regular file/);

  // Another model's file: a random-weight model saves into the same directory.
  const other = join(dir, 'other.gguf');
  execFileSync(process.env.KVFORGE_BIN, ['make-model', '-o', other, '--preset', 'tiny', '--seed', '5'],
               { stdio: 'ignore' });
  const ours = process.env.KVFORGE_MODEL;
  process.env.KVFORGE_MODEL = other;
  const foreign = await startServer(['--block-size', String(BLOCK), '--slot-save-path', slotDir])
    .finally(() => { process.env.KVFORGE_MODEL = ours; });
  try {
    const at = `http://127.0.0.1:${foreign.port}`;
    await post('/v1/completions', { prompt: 'In the beginning God created the heaven and the earth, ' +
      'and the earth was without form, and void', max_tokens: 2, temperature: 0 }, at);
    const s = await post('/slots/0?action=save', { filename: 'other.bin' }, at);
    assert.ok(s.body.n_saved > 0, JSON.stringify(s.body));
  } finally {
    await stopServer(foreign.proc);
  }
  await refused('other.bin', 400, /saved by model 'other.gguf'.*another model/);
});

// `serve --static`: with --slot-save-path the slots keep their K/V between requests, save
// reads the free slot holding the entry's tokens, restore fills a free slot that the next
// request starting with those tokens takes (cached_tokens: all of them but the prompt's
// last), and erase empties it. Files are the paged engine's: one restores into the other.
test('static slots: save, restart, restore, erase', async () => {
  const STATIC = ['--static', '--static-slots', '2', '--max-prompt-len', '192',
                  '--min-response-len', '64', '--slot-save-path', slotDir];
  let s = await startServer(STATIC);
  try {
    const at = () => `http://127.0.0.1:${s.port}`;
    const first = await chat(at());
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.usage.prompt_tokens_details.cached_tokens, 0);
    const prompt = first.body.usage.prompt_tokens;
    const saved = await post('/slots/0?action=save', { filename: 'static.bin' }, at());
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    assert.ok(saved.body.n_saved >= BLOCK && saved.body.n_saved % BLOCK === 0, JSON.stringify(saved.body));

    await stopServer(s.proc);
    s = await startServer(STATIC);  // empty slots
    const restored = await post('/slots/1?action=restore', { filename: 'static.bin' }, at());
    assert.equal(restored.status, 200, JSON.stringify(restored.body));
    assert.equal(restored.body.n_restored, saved.body.n_saved);
    const again = await chat(at());
    assert.equal(again.body.usage.prompt_tokens_details.cached_tokens,
                 Math.min(restored.body.n_restored, prompt - 1));
    assert.equal(again.body.choices[0].message.content, first.body.choices[0].message.content);

    const held = (await (await fetch(`${at()}/slots`)).json())[0].n_prompt_tokens;
    assert.ok(held >= prompt, `slot 0 holds ${held}`);
    const erased = await post('/slots/0?action=erase', {}, at());
    assert.deepEqual(erased, { status: 200, body: { id_slot: 0, n_erased: held } });
    const fresh = await chat(at());
    assert.equal(fresh.body.usage.prompt_tokens_details.cached_tokens, 0);
    assert.equal(fresh.body.choices[0].message.content, first.body.choices[0].message.content);

    // The paged engine's file of the first test: the same blocks.
    const paged = await post('/slots/1?action=restore', { filename: 'chronicles.bin' }, at());
    assert.equal(paged.status, 200, JSON.stringify(paged.body));
    assert.equal(paged.body.n_restored, saved.body.n_saved);
  } finally {
    await stopServer(s.proc);
  }
});

test('without --slot-save-path: 501 naming the flag', async () => {
  const plain = await startServer(['--max-seqs', '2']);
  try {
    for (const action of ['save', 'restore']) {
      const r = await post(`/slots/0?action=${action}`, { filename: 'x.bin' },
                           `http://127.0.0.1:${plain.port}`);
      assert.equal(r.status, 501);
      assert.equal(r.body.error.type, 'not_supported_error');
      assert.match(r.body.error.message, /--slot-save-path/);
    }
  } finally {
    await stopServer(plain.proc);
  }
});
