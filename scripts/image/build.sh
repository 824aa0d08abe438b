#!/usr/bin/env bash
# make image: the Dockerfile's runtime stage around a static binary built
# here (the build stage needs a registry for golang:, these machines have
# none), with podman or docker, whichever exists. Prints the image id.
# Usage: scripts/image/build.sh [TAG]   (env: GO)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
GO=${GO:-go}
tag=${1:-llorch-check:dev}
engine=$(command -v podman || command -v docker || true)
if [ -z "$engine" ]; then
  echo "image: neither podman nor docker is installed (apt-get install podman)" >&2
  exit 2
fi
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
mkdir -p "$ctx/out"
CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false -tags nobuiltin \
  -ldflags "-s -w -X main.linkVersion=$version -X main.linkCommit=$commit" \
  -o "$ctx/out/llorch-check" ./cmd/llorch-check
args=(build --target runtime --build-arg "VERSION=$version" --build-arg "COMMIT=$commit" -t "$tag")
case $engine in
  *podman) args+=(--format docker --build-context "build=$ctx") ;; # docker format keeps HEALTHCHECK
  *docker) args+=(--build-context "build=$ctx") ;;
esac
"$engine" "${args[@]}" . >&2
"$engine" image inspect --format '{{.Id}}' "$tag"
