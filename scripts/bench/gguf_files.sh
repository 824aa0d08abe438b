# Sourced by llamacpp.sh and memory.sh (with here, work, PYTHON and MODEL
# set): the llama.cpp peer, the GPT-2 124M-shaped benchmark model, the
# binaries both scripts run, and the model's GGUF files, each written once
# into .cache/.

test -d scripts/llamacpp/node_modules/node-llama-cpp || make -s peer-llamacpp
if [ ! -f "$MODEL/config.json" ]; then
  echo "bench: writing the benchmark model into $MODEL (once)" >&2
  "$PYTHON" "$here/make_model.py" --out "$MODEL"
fi
go build -o "$work/gobench" ./scripts/bench/gobench
go build -o "$work/llorch-check" ./cmd/llorch-check
go build -tags llamacpp -o "$work/ggml" ./scripts/llamacpp/ggml
gguf=.cache/bench-gguf
mkdir -p "$gguf"

# gguf_files TYPE...: $gguf/gpt2-TYPE.gguf for each, F32, F16 and Q8_0 as
# convert writes them, the others as llama.cpp's own quantizer makes them
# from the F32 file.
gguf_files() {
  local t file
  for t in "$@"; do
    file="$gguf/gpt2-$t.gguf"
    [ -f "$file" ] && continue
    echo "bench: writing $file (once)" >&2
    case $t in
      f32 | f16 | q8_0) "$work/llorch-check" convert --to gguf --type "$t" "$MODEL" "$file" >/dev/null ;;
      *) gguf_files f32
         "$work/ggml" quantize "$gguf/gpt2-f32.gguf" "$file" "$t" >/dev/null 2>&1 ;;
    esac
  done
}
