#!/usr/bin/env bash
# Peak RSS of every weights format llorch-check loads, against issue #14's
# bound: the file plus the KV cache in use, plus 10%. Each benchmark model
# of MODELS (gpt2, the GPT-2 124M shape; smollm-135m and qwen2.5-0.5b, the
# Llama-family shapes of make_llama_model.py) as HF safetensors (float32,
# also held as float16, and its F16 twin) and as GGUF in every type:
# convert's F32, F16 and Q8_0, and llama.cpp's own quantizer's Q4_0 ...
# Q6_K of the F32 file. Each load is a fresh gobench process (load, then
# one decode step), the file in the page cache, held as llorch-check holds
# it by default (--weight-dtype auto: float16 for F16 files, quantised
# types quantised).
# Usage: scripts/bench/memory.sh   (env: PYTHON, MODELS, MODEL (GPT-2's directory))
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
PYTHON=${PYTHON:-/usr/bin/python3}
MODEL=${MODEL:-.cache/bench-gpt2}
MODELS=${MODELS:-"gpt2 smollm-135m qwen2.5-0.5b"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

. "$here/gguf_files.sh"
types="f32 f16 q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K_M Q5_K_M Q6_K"
for name in $MODELS; do
  dir=$(model_dir "$name")
  if [ ! -f "$dir-f16/config.json" ]; then
    echo "bench-memory: writing its F16 twin into $dir-f16 (once)" >&2
    case $name in
      gpt2) "$PYTHON" "$here/make_model.py" --out "$dir-f16" --dtype f16 ;;
      *) "$PYTHON" "$here/make_llama_model.py" --shape "$name" --out "$dir-f16" --dtype f16 ;;
    esac
  fi
  gguf_files "$name" $types
done

# measure MODEL LABEL PATH FILE-BYTES [gobench flags]: one line of JSON.
measure() {
  local model=$1 label=$2 path=$3 bytes=$4
  shift 4
  cat "$path" >/dev/null 2>&1 || find "$path" -type f -exec cat {} + >/dev/null
  echo "bench-memory: $tag$label" >&2
  "$work/gobench" -model "$path" -mode load "$@" |
    "$PYTHON" -c 'import json,sys; d=json.load(sys.stdin); d.update(model=sys.argv[1], name=sys.argv[2], file_bytes=int(sys.argv[3])); print(json.dumps(d))' "$model" "$label" "$bytes"
}
size() { du -b --apparent-size -c "$@" | tail -1 | cut -f1; }
for name in $MODELS; do
  tag= # progress lines and rows name the model when the run has more than GPT-2
  [ "$MODELS" = gpt2 ] || tag="$name "
  dir=$(model_dir "$name")
  measure "$name" "HF safetensors F32" "$dir" "$(size "$dir/model.safetensors")"
  measure "$name" "HF safetensors F32, held as float16" "$dir" "$(size "$dir/model.safetensors")" -f16
  measure "$name" "HF safetensors F16 (matrices)" "$dir-f16" "$(size "$dir-f16/model.safetensors")" -auto
  for t in $types; do
    measure "$name" "GGUF $t" "$gguf/$name-$t.gguf" "$(size "$gguf/$name-$t.gguf")" -auto
  done
done >"$work/rows.jsonl"
"$PYTHON" - "$work/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
if [r["model"] for r in rows] != ["gpt2"] * len(rows):
    for r in rows:
        r["name"] = f"{r['model']} {r['name']}"
w = max([38] + [len(r["name"]) for r in rows])
print(f"{'weights':<{w}} {'file MB':>8} {'KV MB':>6} {'peak RSS MB':>11} {'RSS/(file+KV)':>13}  target <= 1.10")
for r in rows:
    bound = r["file_bytes"] + r["kv_bytes"]
    ratio = r["peak_rss"] / bound
    print(f"{r['name']:<{w}} {r['file_bytes'] / 1e6:8.1f} {r['kv_bytes'] / 1e6:6.2f} {r['peak_rss'] / 1e6:11.1f} {ratio:13.3f}  {'MET' if ratio <= 1.1 else 'NOT MET'}")
PY
