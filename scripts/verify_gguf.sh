#!/usr/bin/env bash
# Lossy GGUF files proved on principle: PyTorch computes a reference set
# from each file's own exact (dequantised) weights (dump_references.py
# --model FILE.gguf), and llorch-check must pass it at the default
# tolerances, as a validation (no cost report); an injected bug must still
# fail. The files:
# what `convert` writes (F32, F16, Q8_0) and, given llama.cpp's quantizer
# (cmd/llamacpp-ggml, make peer-llamacpp), what llama-quantize makes of
# the F32 one (Q4_0 ... Q6_K, Q4_K_M).
# Usage: scripts/verify_gguf.sh [GGML_TOOL]   (env: PYTHON, GO)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
GO=${GO:-go}
ggml=${1:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$GO" build -o "$tmp/llorch-check" ./cmd/llorch-check

files=()
for t in f32 f16 q8_0; do
  "$tmp/llorch-check" convert --to gguf --type "$t" testdata/tiny-gpt2 "$tmp/tiny-$t.gguf" >/dev/null
  files+=("$tmp/tiny-$t.gguf")
done
if [ -n "$ggml" ]; then
  for q in Q4_0 Q4_1 Q5_0 Q5_1 Q4_K_M Q5_K_M Q6_K; do
    "$ggml" quantize "$tmp/tiny-f32.gguf" "$tmp/tiny-$q.gguf" "$q" >/dev/null 2>&1
    files+=("$tmp/tiny-$q.gguf")
  done
fi

bin=$tmp/llorch-check out=$tmp/out name=verify-gguf
. scripts/expect.sh

for f in "${files[@]}"; do
  name=$(basename "$f" .gguf)
  "$PYTHON" pytorch/dump_references.py --model "$f" --cases testdata/cases.json --out "$tmp/refs-$name" >/dev/null
  types=$("$tmp/llorch-check" inspect "$f" | awk -F'│' 'NR>1 && $3 ~ /[A-Z]/ {gsub(/ /,"",$3); print $3}' | sort -u | tr '\n' ' ')
  expect 0 "$name against its own reference set, default tolerances" run --model "$f" --references "$tmp/refs-$name"
  if grep -q '^cost:' "$tmp/out"; then
    echo "verify-gguf: FAIL: $name: a set made from the file itself is a validation, not a cost report" >&2
    exit 1
  fi
  worst=$(awk -F'│' '$2 ~ /^ [0-9]/ {gsub(/ /,"",$7); if ($7+0 > w) w = $7+0} END {print w}' "$tmp/out")
  expect 1 "$name: an injected bug fails there" run --model "$f" --references "$tmp/refs-$name" --inject-fault layernorm-eps
  echo "verify-gguf: ok: $name (types ${types% }): every checkpoint passes at the defaults (worst err/tol $worst); layernorm-eps fails"
done
