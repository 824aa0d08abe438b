#!/usr/bin/env bash
# bench-serve (issue #27 item 6): `llorch-check serve` under 1, 8 and 32
# concurrent streaming clients on loopback, measured by serveload
# (cmd/serveload) in three scenarios: plain (distinct prompts),
# shared-prefix (one long shared prefix: prompt-cache reuse) and
# long-prompt (one long prompt while the others decode: prefill stalls).
# With LLAMA_SERVER=/path/to/llama-server, llama.cpp's server runs the
# same GGUF file with the same number of slots right after ours in each
# scenario, and a table of ratios follows (above 1 favours llorch-check).
# Each scenario gets a fresh server process, so VmHWM is that scenario's
# peak and no prompt is cached from an earlier one.
#
# The model: MODEL (a .gguf file, or an HF directory for ours alone), else
# the GPT-2 124M-shaped benchmark model as GGUF, .cache/bench-gguf/
# gpt2-$FORMAT.gguf (FORMAT: f32, f16 or q8_0, default q8_0), the file
# bench-llamacpp uses, written once by `convert` from .cache/bench-gpt2
# (itself written once by make_model.py, as gguf_files.sh does).
#
# Usage: scripts/bench/serve.sh
#   env: MODEL, FORMAT, CLIENTS (1,8,32), SCENARIOS, PARALLEL (8),
#        MAX_QUEUE (64), MAX_TOKENS (64), PROMPT_TOKENS (32), REQUESTS,
#        SERVE_FLAGS, LLAMA_SERVER, LLAMA_FLAGS, SERVELOAD_FLAGS, OUT (a
#        directory to keep the tables and JSON in), BIN, PYTHON, GO
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
GO=${GO:-go}
PYTHON=${PYTHON:-/usr/bin/python3}
FORMAT=${FORMAT:-q8_0}
CLIENTS=${CLIENTS:-1,8,32}
SCENARIOS=${SCENARIOS:-"plain shared-prefix long-prompt"}
PARALLEL=${PARALLEL:-8}
# serve refuses with 429 beyond --parallel running and --max-queue waiting
# (default 16: 8 of 32 clients); llama-server queues without a bound, so
# the queue is made room for every client unless MAX_QUEUE says otherwise.
MAX_QUEUE=${MAX_QUEUE:-64}
MAX_TOKENS=${MAX_TOKENS:-64}
PROMPT_TOKENS=${PROMPT_TOKENS:-32}
work=$(mktemp -d)
server_pid=

cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# BIN: a llorch-check binary built elsewhere (another commit, say);
# by default this tree's, built into bin/ as `make build` does.
if [ -z "${BIN:-}" ]; then
  $GO build -buildvcs=auto -o bin/llorch-check ./cmd/llorch-check
  BIN=bin/llorch-check
fi
$GO build -o "$work/serveload" ./cmd/serveload

if [ -z "${MODEL:-}" ]; then
  MODEL=.cache/bench-gguf/gpt2-$FORMAT.gguf
  if [ ! -f "$MODEL" ]; then
    if [ ! -f .cache/bench-gpt2/config.json ]; then
      echo "bench-serve: writing the benchmark model into .cache/bench-gpt2 (once)" >&2
      "$PYTHON" "$here/make_model.py" --out .cache/bench-gpt2
    fi
    echo "bench-serve: writing $MODEL (once)" >&2
    mkdir -p .cache/bench-gguf
    "$BIN" convert --to gguf --type "$FORMAT" .cache/bench-gpt2 "$MODEL.tmp" >/dev/null
    mv "$MODEL.tmp" "$MODEL"
  fi
fi

# wait_ready URL: until URL/health answers 200 (both servers answer 503
# while loading), or the server process has died, or two minutes.
wait_ready() {
  local i
  for i in $(seq 600); do
    curl -sf -o /dev/null "$1/health" && return 0
    kill -0 "$server_pid" 2>/dev/null || { echo "bench-serve: the server exited while loading" >&2; return 1; }
    sleep 0.2
  done
  echo "bench-serve: $1 not ready after 2 minutes" >&2
  return 1
}

stop_server() {
  kill "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

# load LABEL SCENARIO URL: serveload against the running server; the
# table goes to stdout and $work/LABEL-SCENARIO.txt, the JSON beside it.
load() {
  "$work/serveload" --url "$3" --label "$1" --scenario "$2" --clients "$CLIENTS" --model-bytes "$model_bytes" \
    --max-tokens "$MAX_TOKENS" --prompt-tokens "$PROMPT_TOKENS" ${REQUESTS:+--requests "$REQUESTS"} \
    --pid "$server_pid" --json "$work/$1-$2.json" ${SERVELOAD_FLAGS:-} | tee "$work/$1-$2.txt"
  echo
}

# The model's size for the memory bound (issue #27: the model plus the
# KV cache's peak plus 10%): the file, or an HF directory's files.
model_bytes=$(du -sbL "$MODEL" | cut -f1)

peer=
if [ -n "${LLAMA_SERVER:-}" ]; then
  case $MODEL in
    *.gguf) peer=1 ;;
    *) echo "bench-serve: llama-server not run: MODEL $MODEL is not a .gguf file" >&2 ;;
  esac
fi

echo "bench-serve: $MODEL, --parallel $PARALLEL, clients $CLIENTS; $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs" >&2
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >"$work/load.txt"
for sc in $SCENARIOS; do
  port=$("$work/serveload" freeport)
  # exec: $! is then the server itself, whose /proc status --pid reads.
  (exec "$BIN" serve --model "$MODEL" --port "$port" --parallel "$PARALLEL" \
    --max-queue "$MAX_QUEUE" ${SERVE_FLAGS:-} >"$work/serve-$sc.log" 2>&1) &
  server_pid=$!
  wait_ready "http://127.0.0.1:$port" || { tail -5 "$work/serve-$sc.log" >&2; exit 1; }
  # The context of one sequence, for llama-server's -c (it splits -c
  # among its -np slots).
  ctx=$(curl -sf "http://127.0.0.1:$port/health" | sed -n 's/.*"context_length":\([0-9]*\).*/\1/p')
  load llorch-check "$sc" "http://127.0.0.1:$port"
  stop_server

  [ -n "$peer" ] || continue
  port=$("$work/serveload" freeport)
  # Its shared libraries sit beside a build tree's binary.
  (LD_LIBRARY_PATH="$(dirname "$LLAMA_SERVER")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    exec "$LLAMA_SERVER" -m "$MODEL" -np "$PARALLEL" -c $((PARALLEL * ctx)) \
    --host 127.0.0.1 --port "$port" ${LLAMA_FLAGS:-} >"$work/llama-$sc.log" 2>&1) &
  server_pid=$!
  wait_ready "http://127.0.0.1:$port" || { tail -5 "$work/llama-$sc.log" >&2; exit 1; }
  load llama-server "$sc" "http://127.0.0.1:$port"
  stop_server
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$work/load.txt"

if [ -n "$peer" ]; then
  for sc in $SCENARIOS; do
    "$work/serveload" compare "$work/llorch-check-$sc.json" "$work/llama-server-$sc.json"
    echo
  done
fi
cat "$work/load.txt"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT" && cp "$work"/*.json "$work"/*.txt "$OUT"/
  echo "bench-serve: tables and JSON copied to $OUT" >&2
fi
