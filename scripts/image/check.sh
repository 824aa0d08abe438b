#!/usr/bin/env bash
# Checks the image make image built: its entrypoint, user, port,
# healthcheck, labels and size, then that what it holds runs. `run` is
# tried first; where the host cannot run containers (podman without
# cgroups, as on these machines) the image's files are extracted and its
# CMD runs from them instead, and the output says which was used.
# Usage: scripts/image/check.sh [TAG]
set -euo pipefail
tag=${1:-llorch-check:dev}
engine=$(command -v podman || command -v docker)
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "image: FAILED: $*" >&2; exit 1; }

field() { "$engine" image inspect --format "$1" "$tag"; }
[ "$(field '{{json .Config.Entrypoint}}')" = '["/llorch-check"]' ] || fail "entrypoint $(field '{{json .Config.Entrypoint}}')"
[ "$(field '{{.Config.User}}')" = "65532:65532" ] || fail "user $(field '{{.Config.User}}'), want the non-root 65532:65532"
field '{{json .Config.ExposedPorts}}' | grep -q '"8080/tcp"' || fail "port 8080 not exposed"
field '{{json .Config.Healthcheck}}' | grep -q 'healthcheck' || fail "no HEALTHCHECK (podman needs --format docker)"
commit=$(field '{{index .Config.Labels "org.opencontainers.image.revision"}}')
version=$(field '{{index .Config.Labels "org.opencontainers.image.version"}}')
[ -n "$commit" ] && [ "$commit" != unknown ] || fail "no revision label"
size=$(field '{{.Size}}')
[ "$size" -lt $((80 << 20)) ] || fail "image is $size bytes, more than 80 MiB"
echo "image: $tag: entrypoint /llorch-check, user 65532:65532, port 8080, HEALTHCHECK, version $version, revision $commit, $((size >> 20)) MiB"

if out=$("$engine" run --rm "$tag" --version 2>&1); then
  echo "image: ran in a container:"
  echo "$out"
  echo "$out" | grep -q "commit:  $commit" || fail "--version does not name commit $commit"
  exit 0
fi
echo "image: this host cannot run containers ($(echo "$out" | tail -1)); running the image's own files instead"
"$engine" save --format docker-archive -o "$work/image.tar" "$tag" >/dev/null 2>&1
mkdir -p "$work/archive" "$work/rootfs"
tar -xf "$work/image.tar" -C "$work/archive"
for layer in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))[0]["Layers"]))' "$work/archive/manifest.json"); do
  tar -xf "$work/archive/$layer" -C "$work/rootfs"
done
bin="$work/rootfs/llorch-check"
"$bin" --version
"$bin" --version | grep -q "commit:  $commit" || fail "--version does not name commit $commit"
# The image's CMD, from its root as the working directory, on a free port.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$work/rootfs" && exec "$bin" serve --host 127.0.0.1 --port "$port" --references testdata/references/tiny-gpt2 2>"$work/serve.log") &
pid=$!
for _ in $(seq 100); do
  "$bin" healthcheck --url "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
"$bin" healthcheck --url "http://127.0.0.1:$port/readyz" || { cat "$work/serve.log" >&2; fail "the image's serve never became ready"; }
echo "image: the image's serve validated its model against the image's references and became ready"
