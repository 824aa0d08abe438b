#!/usr/bin/env bash
# make test: every check in order, stopping at the first failure, then one
# line per step saying whether it passed, failed or was skipped and why.
# With CI=true a step that would be skipped fails instead: CI installs
# everything, so a skip there means a broken install.
# Usage: scripts/test.sh   (env: PYTHON, GO, MAKE, CI)
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
GO=${GO:-go}
MAKE=${MAKE:-make}

torch_missing=""
"$PYTHON" -c 'import torch, numpy' 2>/dev/null ||
  torch_missing="$PYTHON has no torch/numpy (apt-get install -y --no-install-recommends python3-torch python3-numpy libopenblas0-pthread)"

peer_missing=""
if ! command -v node >/dev/null 2>&1; then
  peer_missing="node is not installed (apt-get install -y nodejs npm)"
elif [ ! -d e2e/llamacpp/node_modules/node-llama-cpp ]; then
  peer_missing="the llama.cpp peer is not installed (make peer-llamacpp)"
fi

npm_missing=""
command -v npm >/dev/null 2>&1 ||
  npm_missing="npm is not installed (apt-get install -y --no-install-recommends nodejs npm)"

# tool_missing NAME PACKAGE: why a step needing command NAME cannot run.
tool_missing() {
  command -v "$1" >/dev/null 2>&1 || echo "$1 is not installed (apt-get install -y --no-install-recommends $2)"
}

names=() results=()
passed=0 failed=0 skipped=0

summary() {
  echo
  echo "make test: summary"
  for i in "${!names[@]}"; do
    printf '  %-34s %s\n' "${names[$i]}" "${results[$i]}"
  done
  echo "steps: $passed passed, $failed failed, $skipped skipped"
}

# step NAME NEEDS COMMAND...: NEEDS is torch, peer, npm, tool:CMD:PACKAGE or
# -, or several joined by "+" (peer+torch).
step() {
  local name=$1 needs=$2 missing="" need
  shift 2
  names+=("$name")
  for need in ${needs//+/ }; do
    case $need in
      torch) missing=$torch_missing ;;
      peer) missing=$peer_missing ;;
      npm) missing=$npm_missing ;;
      tool:*) IFS=: read -r _ cmd pkg <<<"$need"; missing=$(tool_missing "$cmd" "$pkg") ;;
    esac
    if [ -n "$missing" ]; then break; fi
  done
  if [ -n "$missing" ]; then
    if [ "${CI:-}" = true ]; then
      results+=("FAILED: $missing")
      failed=$((failed + 1))
      summary
      exit 1
    fi
    results+=("SKIPPED: $missing")
    skipped=$((skipped + 1))
    return
  fi
  echo "== $name"
  if "$@"; then
    results+=("passed")
    passed=$((passed + 1))
  else
    results+=("FAILED")
    failed=$((failed + 1))
    summary
    exit 1
  fi
}

step "lint (gofmt, go vet)" - "$MAKE" -s lint
step "go vet on Windows, macOS, Linux arm64, FreeBSD" - "$MAKE" -s vet-platforms
step "PyTorch reference's tests" torch "$PYTHON" -m unittest discover -s pytorch -p 'test_*.py'
step "verify-references" torch "$MAKE" -s verify-references
step "verify-f16" torch "$MAKE" -s verify-f16
step "verify-gguf" torch "$MAKE" -s verify-gguf
# -timeout: the CLI package's tests (every family's default model, the
# README's examples) take 6-7 minutes under -race on 2 cores, near go
# test's default 10-minute limit when other packages run beside them.
step "go test -race ./..." - "$GO" test -race -timeout 30m ./...
step "kernels and model, pure-Go kernels (purego)" - "$GO" test -count=1 -tags purego ./kernels ./model
step "kernels and model, LLORCH_KERNELS=avx2" - env LLORCH_KERNELS=avx2 "$GO" test -count=1 ./kernels ./model
step "kernels and model, LLORCH_KERNELS=generic" - env LLORCH_KERNELS=generic "$GO" test -count=1 ./kernels ./model
step "chaos probes (short)" - "$GO" run ./cmd/chaos -short
step "llama.cpp interop (node-llama-cpp)" peer "$MAKE" -s interop-llamacpp
step "llama.cpp drift (dump+diff, probe)" peer+torch "$MAKE" -s drift-llamacpp
step "OpenAI SDK compat (npm openai)" npm "$MAKE" -s test-openai-compat
step "deploy manifests (kubectl kustomize)" tool:kubectl:kubernetes-client "$MAKE" -s validate-deploy
step "fleet behind HAProxy" tool:haproxy:haproxy "$MAKE" -s fleet-test
step "container image (podman)" tool:podman:podman "$MAKE" -s test-image
summary
