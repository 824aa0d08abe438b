#!/usr/bin/env bash
# make drift-llamacpp: where llama.cpp's GPT-2 leaves PyTorch on the F32
# GGUF of the tiny model, seen from the inside and from the outside.
#
#  white box  ggml dump (llama.cpp's graph callback) -> llorch-check diff,
#             once with llama.cpp's defaults (F16 KV cache, flash attention
#             auto) and once with an F32 cache and flash attention off, which
#             leaves its F16 GELU table as the only F16 step;
#  black box  ggml serve (/v1/completions over llama.cpp's C API) ->
#             llorch-check probe.
#
# Prints both verdicts and fails unless each is what was measured when this
# was written (docs/gguf.md, "llama.cpp's own forward"): diff names
# attn_out of layer 0 (checkpoint 5) first under the defaults and gelu of
# layer 0 (checkpoint 6) first with F32 attention; probe reports the drift
# with numbers (exit 1) and llama.cpp's greedy text equal to PyTorch's.
# The shim must answer as it promises (shim_contract.mjs), and its top
# log-probabilities at each case's last position must be the default
# dump's, bit for bit (same_numbers.mjs). A broken mapping, a
# shim that does not speak the API (exit 2) or answers other numbers, or a
# llama.cpp that stops drifting all fail.
# Usage: scripts/llamacpp/drift.sh   (env: GO; needs node, make peer-llamacpp)
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
MODEL=testdata/tiny-gpt2
REFS=testdata/references/tiny-gpt2

tmp=$(mktemp -d)
shim=""
cleanup() {
  if [ -n "$shim" ]; then kill "$shim" 2>/dev/null || true; wait "$shim" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

"$GO" build -o "$tmp/llorch-check" ./cmd/llorch-check
"$GO" build -tags llamacpp -o "$tmp/ggml" ./scripts/llamacpp/ggml
"$tmp/llorch-check" convert --to gguf --type f32 "$MODEL" "$tmp/tiny-f32.gguf" >/dev/null

fail=0
verdicts=()
# first_drift JSON: "checkpoint name layer" of the first failing tensor in
# diff's forward order, and its largest error.
first_drift() {
  node -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8")).results.filter(t => !t.passed);
    if (!r.length) { console.log("none"); process.exit(0); }
    console.log(`${r[0].checkpoint} ${r[0].name} ${r[0].layer} (case ${r[0].case}, max abs err ${r[0].max_abs_err.toExponential(2)})`);'
}

# white LABEL WANT KV FLASH_ATTN: dump with those llama.cpp context
# settings, diff, and compare the first drifting tensor with WANT.
white() {
  local label=$1 want=$2 kv=$3 fa=$4 out="$tmp/dump-$3-$4" rc=0
  "$tmp/ggml" dump -model "$tmp/tiny-f32.gguf" -baseline "$REFS" -out "$out" -kv "$kv" -flash-attn "$fa"
  "$tmp/llorch-check" diff "$REFS" "$out" || rc=$?
  local first
  first=$("$tmp/llorch-check" diff "$REFS" "$out" --format json | first_drift) || true
  if [ "$rc" -eq 1 ] && [ "${first%% (*}" = "$want" ]; then
    verdicts+=("white box, $label: llama.cpp first leaves PyTorch at $first")
  else
    verdicts+=("white box, $label: FAILED: diff exit $rc, first drifting tensor '$first', want '$want'")
    fail=1
  fi
}

white "llama.cpp defaults (F16 KV cache, flash attention auto)" "5 attn_out 0" f16 auto
white "F32 KV cache, flash attention off" "6 gelu 0" f32 off

"$tmp/ggml" serve -model "$tmp/tiny-f32.gguf" -addr 127.0.0.1:0 >"$tmp/shim.log" 2>&1 &
shim=$!
url=""
for _ in $(seq 100); do
  url=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$tmp/shim.log")
  [ -n "$url" ] && break
  kill -0 "$shim" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "black box: FAILED: the shim did not start:"; cat "$tmp/shim.log"; exit 1
fi
rc=0
"$tmp/llorch-check" probe --endpoint "$url" --references "$REFS" --format json >"$tmp/probe.json" || rc=$?
"$tmp/llorch-check" probe --endpoint "$url" --references "$REFS" || true
verdict=$(node -e 'const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const by = n => d.results.filter(t => t.checkpoint === n);
  const worst = n => Math.max(...by(n).map(t => t.max_abs_err)).toExponential(2);
  const ok = n => by(n).length > 0 && by(n).every(t => t.passed);
  console.log(`checkpoint 9 max abs err ${worst(9)} (${by(9).filter(t => t.passed).length}/${by(9).length} pass), checkpoint 11 ${worst(11)}, checkpoint 12 ${ok(12) ? "passed" : "FAILED"}`);' "$tmp/probe.json") || verdict="unreadable probe JSON"
if [ "$rc" -eq 1 ] && [[ $verdict == *"checkpoint 12 passed"* ]]; then
  verdicts+=("black box, llama.cpp defaults through the /v1/completions shim: drifts, $verdict")
else
  verdicts+=("black box: FAILED: probe exit $rc (want 1: a measured drift), $verdict")
  fail=1
fi
if node scripts/llamacpp/shim_contract.mjs "$url"; then
  verdicts+=("shim: answers as OpenAI's /v1/completions where probe reads it, refuses the rest naming it")
else
  verdicts+=("shim: FAILED: shim_contract.mjs")
  fail=1
fi
# The shim runs the dump's GGUF with the same (default) settings: its
# numbers must be the dump's, so both boxes measure the same llama.cpp.
if node scripts/llamacpp/same_numbers.mjs "$url" "$tmp/dump-f16-auto"; then
  verdicts+=("shim vs dump: the same llama.cpp log-probabilities, bit for bit, at every case's last position")
else
  verdicts+=("shim vs dump: FAILED: the shim's log-probabilities are not the dump's")
  fail=1
fi
echo
echo "drift-llamacpp: verdicts"
printf '  %s\n' "${verdicts[@]}"
exit $fail
