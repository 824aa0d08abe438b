# Sourced by llamacpp.sh and memory.sh (with here, work, PYTHON and MODEL
# set): the llama.cpp peer, the binaries both scripts run, and each
# benchmark model with its GGUF files, every one written once into .cache/.
# The models, by name: gpt2, the GPT-2 124M-shaped model of make_model.py
# (in $MODEL), and the shapes of make_llama_model.py (smollm-135m,
# qwen2.5-0.5b, gemma3-1b, qwen3-30b-a3b-2l; in .cache/bench-NAME).

test -d e2e/llamacpp/node_modules/node-llama-cpp || make -s peer-llamacpp
go build -o "$work/gobench" ./cmd/gobench
go build -o "$work/llorch-check" ./cmd/llorch-check
go build -tags llamacpp -o "$work/ggml" ./cmd/llamacpp-ggml
gguf=.cache/bench-gguf
mkdir -p "$gguf"

# model_dir NAME: prints the HF directory of benchmark model NAME, writing
# the model there first if it is not there yet.
model_dir() {
  local dir=.cache/bench-$1
  [ "$1" = gpt2 ] && dir=$MODEL
  if [ ! -f "$dir/config.json" ]; then
    echo "bench: writing the benchmark model into $dir (once)" >&2
    case $1 in
      gpt2) "$PYTHON" "$here/make_model.py" --out "$dir" ;;
      *) "$PYTHON" "$here/make_llama_model.py" --shape "$1" --out "$dir" ;;
    esac
  fi
  echo "$dir"
}

# gguf_files NAME TYPE...: $gguf/NAME-TYPE.gguf for each, F32, F16 and
# Q8_0 as convert writes them, the others as llama.cpp's own quantizer
# makes them from the F32 file, or from the F16 file when the HF weights
# are float16 (qwen3-30b-a3b-2l): an F32 file would hold the same values
# in twice the space (7.5 GB there).
gguf_files() {
  local name=$1 t file dir src
  shift
  for t in "$@"; do
    file="$gguf/$name-$t.gguf"
    [ -f "$file" ] && continue
    dir=$(model_dir "$name")
    echo "bench: writing $file (once)" >&2
    case $t in
      f32 | f16 | q8_0) "$work/llorch-check" convert --to gguf --type "$t" "$dir" "$file" >/dev/null ;;
      *) src=f32
         grep -q '"torch_dtype": "float16"' "$dir/config.json" && src=f16
         gguf_files "$name" $src
         "$work/ggml" quantize "$gguf/$name-$src.gguf" "$file.tmp" "$t" >/dev/null 2>&1
         mv "$file.tmp" "$file" ;;
    esac
  done
}
