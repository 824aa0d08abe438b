// Encodes the corpus file with the npm gpt-tokenizer package (GPT-2's
// r50k encoding) and prints one JSON line: throughput cold (first pass, an
// empty merge cache) and warm (best of the later passes), the token count,
// and a checksum of the ids for parity with the Go run.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { encode } from 'gpt-tokenizer/encoding/gpt2';

const [path, passesArg] = process.argv.slice(2);
if (!path) {
  console.error('usage: node bench.mjs CORPUS [PASSES]');
  process.exit(2);
}
const text = readFileSync(path, 'utf8');
const mb = Buffer.byteLength(text, 'utf8') / 1e6;
const passes = Number(passesArg ?? 5);

let ids;
let t0 = performance.now();
ids = encode(text);
const cold = mb / ((performance.now() - t0) / 1000);
let warm = 0;
for (let i = 0; i < passes; i++) {
  t0 = performance.now();
  ids = encode(text);
  warm = Math.max(warm, mb / ((performance.now() - t0) / 1000));
}
let sum = 0;
for (const id of ids) sum = (Math.imul(sum, 31) + id) >>> 0;
console.log(JSON.stringify({ impl: `gpt-tokenizer (node ${process.version})`, cold_mbps: cold, warm_mbps: warm, tokens: ids.length, checksum: sum }));
