# llorch-check serve as a container: the Go build, then a scratch runtime
# holding only the static binary, the default tiny model and its reference
# set, run as a non-root user. The binary is built with -tags nobuiltin:
# the image holds the defaults as files, so the binary need not carry its
# own copy (37 MB), nor write one out (the root file system may be
# read-only). With a registry: `docker build .`. Offline
# (`make image`), the build stage is replaced by a binary built on the
# host: `podman build --build-context build=DIR`, DIR holding out/llorch-check.
ARG GO_VERSION=1.26
FROM docker.io/library/golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -tags nobuiltin \
    -ldflags "-s -w -X main.linkVersion=${VERSION} -X main.linkCommit=${COMMIT}" \
    -o /out/llorch-check ./cmd/llorch-check

FROM scratch AS runtime
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="llorch-check" \
      org.opencontainers.image.description="GPT-2 inference validated checkpoint by checkpoint against PyTorch, served over the llama-orch worker, batch and OpenAI APIs" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
COPY --from=build /out/llorch-check /llorch-check
COPY testdata/tiny-gpt2 /testdata/tiny-gpt2
COPY testdata/references/tiny-gpt2 /testdata/references/tiny-gpt2
# The defaults resolve against the working directory: / holds testdata/.
WORKDIR /
USER 65532:65532
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
    CMD ["/llorch-check", "healthcheck", "--url", "http://127.0.0.1:8080/readyz"]
ENTRYPOINT ["/llorch-check"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080", "--references", "/testdata/references/tiny-gpt2"]
