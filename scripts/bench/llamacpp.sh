#!/usr/bin/env bash
# llorch-check next to llama.cpp on the same GGUF files of the GPT-2
# 124M-shaped benchmark model, in one run: F32, F16 and Q8_0 as `convert`
# writes them and Q4_K_M as llama.cpp's own quantizer makes it from the F32
# file. gobench and `ggml bench` (llama.cpp's C API called natively from
# scripts/llamacpp/ggml: node-llama-cpp's JavaScript binding adds 2-9 ms a
# decode step here, which would flatter us) measure the same figures on the
# same token ids, both in a Go process; they alternate, llama.cpp under each
# thread count of PEER_THREADS keeping its best per figure, and one table
# per format prints ratios (above 1: llorch-check is better).
# Usage: scripts/bench/llamacpp.sh   (env: PYTHON, MODEL, PEER_THREADS, FORMATS)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
PYTHON=${PYTHON:-/usr/bin/python3}
MODEL=${MODEL:-.cache/bench-gpt2}
PEER_THREADS=${PEER_THREADS:-"1 2"}
FORMATS=${FORMATS:-"f32 f16 q8_0 Q4_K_M"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

. "$here/gguf_files.sh"
gguf_files $FORMATS

# An F16 file runs as a user would run it, matrices held as float16
# (--weight-dtype f16); quantised files stay quantised in memory.
gobench_flags() { [ "$1" = f16 ] && echo -f16 || true; }

echo "load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)" >"$work/load.txt"
for f in $FORMATS; do
  file="$gguf/gpt2-$f.gguf"
  cat "$file" >/dev/null # both sides load from the page cache
  echo "bench: $f: load time and peak RSS" >&2
  "$work/gobench" -model "$file" -mode load $(gobench_flags "$f") >"$work/$f.go_load.json"
  "$work/ggml" bench -model "$file" -mode load >"$work/$f.peer_load.json"
  i=0
  for t in $PEER_THREADS; do
    echo "bench: $f: round $((i + 1)): llorch-check, then llama.cpp with $t threads" >&2
    "$work/gobench" -model "$file" $(gobench_flags "$f") >"$work/$f.go_$i.json"
    "$work/ggml" bench -model "$file" -threads "$t" >"$work/$f.peer_$i.json"
    i=$((i + 1))
  done
done
echo "load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$work/load.txt"
"$PYTHON" "$here/table_llamacpp.py" "$work" "$gguf" $FORMATS
