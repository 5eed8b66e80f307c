// Writes the structured-output schema corpus (tests/app/server/schema_corpus.mjs)
// and a 50-property object schema as one .json file each into DIR, for
// `kvforge grammar bench -m VOCAB DIR/*.json` (docs/bench/grammar-masks.md).
// Usage: node tools/grammar_bench/write_corpus.mjs DIR
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCHEMAS } from '../../tests/app/server/schema_corpus.mjs';

const dir = process.argv[2];
if (!dir) throw new Error('usage: write_corpus.mjs DIR');
mkdirSync(dir, { recursive: true });
SCHEMAS.forEach(({ name, schema }, i) => {
  const file = `${String(i).padStart(2, '0')}_${name}.json`;
  writeFileSync(join(dir, file), JSON.stringify(schema));
});
// Fifty properties of every scalar kind, all required: the time-to-first-mask case.
const kinds = [
  { type: 'string', maxLength: 20 },
  { type: 'integer' },
  { type: 'number' },
  { type: 'boolean' },
  { enum: ['low', 'mid', 'high'] },
];
const properties = {};
for (let i = 0; i < 50; ++i) properties[`field_${i}`] = kinds[i % kinds.length];
const wide = { type: 'object', properties, required: Object.keys(properties), additionalProperties: false };
writeFileSync(join(dir, '99_fifty_properties.json'), JSON.stringify(wide));
