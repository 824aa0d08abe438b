#!/usr/bin/env bash
# llorch-check next to llama.cpp on the same GGUF files of each benchmark
# model, in one run: the GPT-2 124M-shaped model (gpt2) and the
# Llama-family SmolLM-135M and Qwen2.5-0.5B shapes of make_llama_model.py
# (smollm-135m, qwen2.5-0.5b; gemma3-1b and qwen3-30b-a3b-2l, Gemma-3-1B
# and 2 of Qwen3-30B-A3B's layers, when MODELS names them). F32, F16 and
# Q8_0 as `convert` writes them
# and Q4_K_M as llama.cpp's own quantizer makes it from the F32 file.
# gobench and `ggml bench` (llama.cpp's C API called natively from
# cmd/llamacpp-ggml: node-llama-cpp's JavaScript binding adds 2-9 ms a
# decode step here, which would flatter us) measure the same figures on the
# same token ids, both in a Go process; they alternate, llama.cpp under each
# thread count of PEER_THREADS keeping its best per figure, and one table
# per model and format prints ratios (above 1: llorch-check is better).
# FORMATS, when set, is every model's list; by default GPT-2 runs
# f32 f16 q8_0 Q4_K_M and the Llama shapes f16 q8_0 Q4_K_M.
# CPU=avx2 measures what a CPU with AVX2 and no AVX-512 (Zen 2 and 3,
# Intel client cores before Ice Lake) would see, on this one: our
# LLORCH_KERNELS=avx2 against the CPU backend ggml picks on such a CPU
# (its haswell variant, the only one left in a copy of the library
# directory); each table names the backend that ran. CPU=avxvnni is the
# same for a CPU with AVX2 and AVX-VNNI but no AVX-512 (Intel client cores
# since Alder Lake, its E-core Xeons): LLORCH_KERNELS=avxvnni against
# ggml's alderlake variant. Both need this CPU to have what they emulate.
# Usage: scripts/bench/llamacpp.sh
#   (env: PYTHON, MODELS, MODEL (GPT-2's directory), PEER_THREADS, FORMATS, CPU)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
PYTHON=${PYTHON:-/usr/bin/python3}
MODEL=${MODEL:-.cache/bench-gpt2}
MODELS=${MODELS:-"gpt2 smollm-135m qwen2.5-0.5b"}
PEER_THREADS=${PEER_THREADS:-"1 2"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# formats NAME: the GGUF types model NAME runs.
formats() {
  if [ -n "${FORMATS:-}" ]; then
    echo "$FORMATS"
  elif [ "$1" = gpt2 ]; then
    echo "f32 f16 q8_0 Q4_K_M"
  else
    echo "f16 q8_0 Q4_K_M"
  fi
}

. "$here/gguf_files.sh"
case ${CPU:-native} in
native) ;;
avx2 | avxvnni)
  export LLORCH_KERNELS=$CPU
  variant=haswell
  if [ "$CPU" = avxvnni ]; then
    grep -qw avx_vnni /proc/cpuinfo || { echo "bench: CPU=avxvnni: this CPU has no AVX-VNNI" >&2; exit 2; }
    variant=alderlake
  fi
  libs=$root/e2e/llamacpp/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
  export GGML_LIB_DIR=$work/ggml-$CPU
  mkdir -p "$GGML_LIB_DIR"
  for lib in "$libs"/*.so; do
    case $(basename "$lib") in
    libggml-cpu-*) ;;
    *) ln -s "$lib" "$GGML_LIB_DIR/" ;;
    esac
  done
  ln -s "$libs/libggml-cpu-$variant.so" "$GGML_LIB_DIR/"
  ;;
*)
  echo "bench: CPU=$CPU: want native, avx2 or avxvnni" >&2
  exit 2
  ;;
esac
specs=()
for name in $MODELS; do
  gguf_files "$name" $(formats "$name")
  specs+=("$name=$(formats "$name" | tr ' ' ,)")
done

# An F16 file runs as a user would run it, matrices held as float16
# (--weight-dtype f16); quantised files stay quantised in memory.
gobench_flags() { [ "$1" = f16 ] && echo -f16 || true; }

echo "load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)" >"$work/load.txt"
# The machine's read bandwidth, before and after (best kept), against which
# each decode's weight bandwidth is printed.
echo "bench: read bandwidth" >&2
"$work/gobench" -mode bandwidth >"$work/bandwidth_0.json"
for name in $MODELS; do
  tag= # progress lines name the model when the run has more than GPT-2
  [ "$MODELS" = gpt2 ] || tag="$name "
  for f in $(formats "$name"); do
    file="$gguf/$name-$f.gguf"
    out="$work/$name-$f"
    cat "$file" >/dev/null # both sides load from the page cache
    echo "bench: $tag$f: load time and peak RSS" >&2
    # The first load writes the weights cache, the second maps it: both
    # are reported, the second against llama.cpp's (which maps the file).
    "$work/gobench" -model "$file" -mode load -weights-cache "$work/weights-cache" $(gobench_flags "$f") >"$out.go_load_first.json"
    "$work/gobench" -model "$file" -mode load -weights-cache "$work/weights-cache" $(gobench_flags "$f") >"$out.go_load.json"
    "$work/ggml" bench -model "$file" -mode load >"$out.peer_load.json"
    i=0
    for t in $PEER_THREADS; do
      echo "bench: $tag$f: round $((i + 1)): llorch-check, then llama.cpp with $t threads" >&2
      "$work/gobench" -model "$file" $(gobench_flags "$f") >"$out.go_$i.json"
      "$work/ggml" bench -model "$file" -threads "$t" >"$out.peer_$i.json"
      i=$((i + 1))
    done
  done
done
"$work/gobench" -mode bandwidth >"$work/bandwidth_1.json"
echo "load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$work/load.txt"
"$PYTHON" "$here/table_llamacpp.py" "$work" "$gguf" "${specs[@]}"
