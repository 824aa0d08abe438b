#!/usr/bin/env bash
# The forward-pass benchmark next to its PyTorch peer, in one run: makes the
# GPT-2 124M-shaped random model once (into .cache/, git-ignored), measures
# the Go model package (gobench) and PyTorch (peer_torch.py) on the same
# weights and token ids, and prints one table. The peer runs under every
# thread setting in PEER_CONFIGS ("torch_threads:openblas_threads", space
# separated) and each figure keeps its best, so the comparison is against
# PyTorch at its best on this machine. Each round also measures 16-bit
# weights: Go holding float16 (gobench -f16) against PyTorch's bfloat16.
# Set F16=0 to skip them.
# Usage: scripts/bench/run.sh   (env: PYTHON, MODEL, PEER_CONFIGS, GOBENCH_FLAGS)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
PYTHON=${PYTHON:-/usr/bin/python3}
MODEL=${MODEL:-.cache/bench-gpt2}
PEER_CONFIGS=${PEER_CONFIGS:-"1:1 1:2 2:1 2:2"}
F16=${F16:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! "$PYTHON" -c 'import torch, numpy' 2>/dev/null; then
  echo "bench: $PYTHON has no torch/numpy (apt-get install python3-torch python3-numpy libopenblas0-pthread)" >&2
  exit 1
fi
# ldconfig is not on a non-root PATH everywhere; the library files will do.
if ! { ls /usr/lib/*/libopenblas*.so* /usr/lib/*/openblas*/libblas.so* 2>/dev/null ||
       { /sbin/ldconfig -p 2>/dev/null || ldconfig -p 2>/dev/null; } | grep libopenblas; } >/dev/null; then
  echo "bench: OpenBLAS is not installed; PyTorch would fall back to reference BLAS (~25x slower)." >&2
  echo "       apt-get install libopenblas0-pthread, then rerun" >&2
  exit 1
fi
if [ ! -f "$MODEL/config.json" ]; then
  echo "bench: writing the benchmark model into $MODEL (once)" >&2
  "$PYTHON" "$here/make_model.py" --out "$MODEL"
fi
go build -o "$work/gobench" ./cmd/gobench

echo "load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# The machine's read bandwidth, before and after (best kept): what each
# decode's weight bandwidth is measured against.
echo "bench: read bandwidth" >&2
"$work/gobench" -mode bandwidth >"$work/bandwidth_0.json"
# Warm the page cache so that both load times measure the same thing.
cat "$MODEL/model.safetensors" >/dev/null
echo "bench: load time and peak RSS" >&2
"$work/gobench" -model "$MODEL" -mode load >"$work/go_load.json"
"$PYTHON" "$here/peer_torch.py" --model "$MODEL" --mode load >"$work/py_load.json"
if [ "$F16" = 1 ]; then
  "$work/gobench" -model "$MODEL" -mode load -f16 >"$work/go16_load.json"
  "$PYTHON" "$here/peer_torch.py" --model "$MODEL" --mode load --dtype bf16 >"$work/py16_load.json"
fi
# Go and each PyTorch thread setting alternate, so that a change in the
# load of the shared machine hits both sides alike; each side keeps its
# best rate per figure (Go gets as many attempts as PyTorch has settings).
i=0
for cfg in $PEER_CONFIGS; do
  tt=${cfg%%:*} ob=${cfg##*:}
  echo "bench: round $((i + 1)): Go, then PyTorch torch_threads=$tt OPENBLAS_NUM_THREADS=$ob" >&2
  "$work/gobench" -model "$MODEL" ${GOBENCH_FLAGS:-} >"$work/go_$i.json"
  OPENBLAS_NUM_THREADS=$ob "$PYTHON" "$here/peer_torch.py" --model "$MODEL" --mode run --threads "$tt" >"$work/py_$i.json"
  if [ "$F16" = 1 ]; then
    echo "bench: round $((i + 1)), 16-bit weights: Go float16, then PyTorch bfloat16" >&2
    "$work/gobench" -model "$MODEL" -f16 ${GOBENCH_FLAGS:-} >"$work/go16_$i.json"
    OPENBLAS_NUM_THREADS=$ob "$PYTHON" "$here/peer_torch.py" --model "$MODEL" --mode run --threads "$tt" --dtype bf16 >"$work/py16_$i.json"
  fi
  i=$((i + 1))
done
"$work/gobench" -mode bandwidth >"$work/bandwidth_1.json"
echo "load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg)" >"$work/load.txt"
"$PYTHON" "$here/table.py" "$work" "$MODEL/model.safetensors"
