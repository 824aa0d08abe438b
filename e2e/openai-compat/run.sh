#!/usr/bin/env bash
# The OpenAI SDK compatibility suite: builds llorch-check, serves the tiny
# model on a free loopback port with an API key, installs the pinned SDKs
# (npm ci, again whenever package-lock.json is newer than the install) and
# runs compat.test.mjs (the openai SDK) and ai-sdk.test.mjs (the Vercel AI
# SDK's OpenAI provider) against it. Exit status is the suite's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && ${GO:-go} build -o "$work/llorch-check" ./cmd/llorch-check)
[ "$here/node_modules/.package-lock.json" -nt "$here/package-lock.json" ] || npm ci --prefix "$here" --no-audit --no-fund --loglevel=error

key=compat-key
"$work/llorch-check" serve --model "$root/testdata/tiny-gpt2" --port 0 --api-key "$key" 2>"$work/serve.log" &
pid=$!
addr=
for _ in $(seq 1 100); do
  addr=$(sed -n 's/.*"msg":"listening","addr":"\([^"]*\)".*/\1/p' "$work/serve.log" | head -n1)
  if [ -n "$addr" ] && curl -fs "http://$addr/readyz" >/dev/null; then break; fi
  kill -0 "$pid" 2>/dev/null || { echo "openai-compat: serve exited:" >&2; cat "$work/serve.log" >&2; exit 1; }
  sleep 0.1
done
curl -fs "http://$addr/readyz" >/dev/null || { echo "openai-compat: serve not ready:" >&2; cat "$work/serve.log" >&2; exit 1; }

cd "$here"
OPENAI_BASE_URL="http://$addr/v1" OPENAI_API_KEY="$key" node --test compat.test.mjs ai-sdk.test.mjs
