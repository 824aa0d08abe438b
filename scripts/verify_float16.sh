#!/usr/bin/env bash
# End-to-end check of float16 weights in memory (--weight-dtype f16) on a
# model whose float32 weights are not float16 values, so the rounding is
# real: the tiny model's float32 twin (same seed), with
#   - its own reference set, dumped by PyTorch from the same rounded
#     weights (dump_references.py --weight-dtype f16): every checkpoint must
#     pass at the default tolerances, an injected bug must fail, and a
#     float32-held model must be refused;
#   - the float32 reference set: a cost report (what float16 storage costs),
#     not a validation, exit 0.
# Usage: scripts/verify_float16.sh   (env: PYTHON, GO)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
GO=${GO:-go}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$PYTHON" pytorch/make_tiny_model.py --dtype f32 --out "$tmp/model"
"$PYTHON" pytorch/dump_references.py --model "$tmp/model" --cases testdata/cases.json --weight-dtype f16 --out "$tmp/refs-f16" >/dev/null
"$PYTHON" pytorch/dump_references.py --model "$tmp/model" --cases testdata/cases.json --out "$tmp/refs-f32" >/dev/null
"$GO" build -o "$tmp/llorch-check" ./cmd/llorch-check

bin=$tmp/llorch-check out=$tmp/out name=verify-f16
. scripts/expect.sh
# expect, then say it passed.
expect_ok() {
  expect "$@"
  echo "verify-f16: ok: $2 (exit $1)"
}

m=(--model "$tmp/model")
expect_ok 0 "float16 weights against their own reference set, default tolerances" \
  run "${m[@]}" --references "$tmp/refs-f16" --weight-dtype f16
if grep -q '^cost:' "$tmp/out"; then
  echo "verify-f16: FAIL: a float16 set for a float16 model is a validation, not a cost report" >&2
  exit 1
fi
expect_ok 1 "an injected bug fails there" \
  run "${m[@]}" --references "$tmp/refs-f16" --weight-dtype f16 --inject-fault layernorm-eps
expect_ok 2 "a float32-held model is refused by the float16 set" \
  run "${m[@]}" --references "$tmp/refs-f16"
expect_ok 0 "float16 weights against the float32 set: a cost report" \
  run "${m[@]}" --references "$tmp/refs-f32" --weight-dtype f16
grep -q '^COST REPORT (not a validation)' "$tmp/out" || { echo "verify-f16: FAIL: not reported as a cost report" >&2; cat "$tmp/out" >&2; exit 1; }
expect_ok 0 "float32 weights against the float32 set, default tolerances" \
  run "${m[@]}" --references "$tmp/refs-f32"
