#!/usr/bin/env bash
# Peak RSS of every weights format llorch-check loads, against issue #14's
# bound: the file plus the KV cache in use, plus 10%. The GPT-2
# 124M-shaped benchmark model as HF safetensors (float32, also held as
# float16, and its F16 twin) and as GGUF in every type: convert's F32, F16
# and Q8_0, and llama.cpp's own quantizer's Q4_0 ... Q6_K of the F32 file.
# Each load is a fresh gobench process (load, then one decode step), the
# file in the page cache, held as llorch-check holds it by default
# (--weight-dtype auto: float16 for F16 files, quantised types quantised).
# Usage: scripts/bench/memory.sh   (env: PYTHON, MODEL)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
PYTHON=${PYTHON:-/usr/bin/python3}
MODEL=${MODEL:-.cache/bench-gpt2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

. "$here/gguf_files.sh"
if [ ! -f "$MODEL-f16/config.json" ]; then
  echo "bench-memory: writing its F16 twin into $MODEL-f16 (once)" >&2
  "$PYTHON" "$here/make_model.py" --out "$MODEL-f16" --dtype f16
fi
types="f32 f16 q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K_M Q5_K_M Q6_K"
gguf_files $types

# measure NAME PATH FILE-BYTES [gobench flags]: one line of JSON.
measure() {
  local name=$1 path=$2 bytes=$3
  shift 3
  cat "$path" >/dev/null 2>&1 || find "$path" -type f -exec cat {} + >/dev/null
  echo "bench-memory: $name" >&2
  "$work/gobench" -model "$path" -mode load "$@" |
    "$PYTHON" -c 'import json,sys; d=json.load(sys.stdin); d.update(name=sys.argv[1], file_bytes=int(sys.argv[2])); print(json.dumps(d))' "$name" "$bytes"
}
size() { du -b --apparent-size -c "$@" | tail -1 | cut -f1; }
{
  measure "HF safetensors F32" "$MODEL" "$(size "$MODEL/model.safetensors")"
  measure "HF safetensors F32, held as float16" "$MODEL" "$(size "$MODEL/model.safetensors")" -f16
  measure "HF safetensors F16 (matrices)" "$MODEL-f16" "$(size "$MODEL-f16/model.safetensors")" -auto
  for t in $types; do
    measure "GGUF $t" "$gguf/gpt2-$t.gguf" "$(size "$gguf/gpt2-$t.gguf")" -auto
  done
} >"$work/rows.jsonl"
"$PYTHON" - "$work/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'weights':<38} {'file MB':>8} {'KV MB':>6} {'peak RSS MB':>11} {'RSS/(file+KV)':>13}  target <= 1.10")
for r in rows:
    bound = r["file_bytes"] + r["kv_bytes"]
    ratio = r["peak_rss"] / bound
    print(f"{r['name']:<38} {r['file_bytes'] / 1e6:8.1f} {r['kv_bytes'] / 1e6:6.2f} {r['peak_rss'] / 1e6:11.1f} {ratio:13.3f}  {'MET' if ratio <= 1.1 else 'NOT MET'}")
PY
