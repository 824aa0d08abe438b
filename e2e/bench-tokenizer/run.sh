#!/usr/bin/env bash
# Tokenizer throughput next to a peer measured in the same run: builds the
# corpus once, encodes it with the Go tokenizer and with npm's gpt-tokenizer
# under node, checks both produced the same tokens, and prints one table.
# Usage: e2e/bench-tokenizer/run.sh [CORPUS_BYTES]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
size=${1:-4194304}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cd "$root"
if [ ! -d "$here/node_modules/gpt-tokenizer" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --silent)
fi
go run ./cmd/benchcorpus -size "$size" "$work/corpus.txt"
go build -o "$work/tokenizerbench" ./cmd/tokenizerbench
"$work/tokenizerbench" "$work/corpus.txt" >"$work/go.json"
node "$here/bench.mjs" "$work/corpus.txt" >"$work/peer.json"

node - "$work/go.json" "$work/peer.json" "$(wc -c <"$work/corpus.txt")" <<'JS'
const fs = require('fs');
const [goFile, peerFile, bytes] = process.argv.slice(2);
const g = JSON.parse(fs.readFileSync(goFile, 'utf8'));
const p = JSON.parse(fs.readFileSync(peerFile, 'utf8'));
const rows = [
  ['figure', 'Go', 'peer', 'ratio Go/peer'],
  ['encode MB/s, cold cache (first pass)', g.cold_mbps.toFixed(2), p.cold_mbps.toFixed(2), (g.cold_mbps / p.cold_mbps).toFixed(2)],
  ['encode MB/s, warm (best of 5 passes)', g.warm_mbps.toFixed(2), p.warm_mbps.toFixed(2), (g.warm_mbps / p.warm_mbps).toFixed(2)],
  ['tokens', String(g.tokens), String(p.tokens), (g.tokens / p.tokens).toFixed(4)],
];
const w = rows[0].map((_, i) => Math.max(...rows.map(r => r[i].length)));
console.log(`corpus: ${bytes} bytes of prose and code; Go = ${g.impl}, peer = ${p.impl}`);
for (const r of rows) console.log(r.map((c, i) => i ? c.padStart(w[i]) : c.padEnd(w[i])).join('  '));
const same = g.tokens === p.tokens && g.checksum === p.checksum;
console.log(same ? 'parity: identical token ids (count and checksum match)'
                 : `PARITY MISMATCH: checksum Go ${g.checksum} peer ${p.checksum}`);
process.exit(same ? 0 : 1);
JS
