// Command gobench measures the model package exactly as peer_torch.py
// measures PyTorch, on the same weights and token ids, and prints one JSON
// line. Modes: "load" (load time, peak RSS after one decode step), "run"
// (prefill, batch-1 decode, batched decode, and the weight bytes a decode
// step reads) and "bandwidth" (the machine's read bandwidth, no model). Best-of repetitions, as the
// peer does, because the machine is shared.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/llorch/llorch-check/internal/procstat"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
)

func main() {
	dir := flag.String("model", ".cache/bench-gpt2", "model directory")
	mode := flag.String("mode", "run", "load or run")
	prefill := flag.Int("prefill", 128, "prefill tokens")
	prompt := flag.Int("prompt", 16, "prompt length before decoding")
	steps := flag.Int("steps", 64, "decode steps")
	reps := flag.Int("reps", 3, "prefill repetitions (best kept)")
	batches := flag.String("batches", "4,8", "batch sizes for batched decode")
	only := flag.String("only", "", "run one figure only (prefill, decode1, decodeN) for profiling")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile")
	memprofile := flag.String("memprofile", "", "write an allocation profile at the end (what the figures allocated: a pass's garbage is fresh memory to fault in while the weights' heap is large)")
	f16 := flag.Bool("f16", false, "hold the weight matrices as float16 (loader.Options.Float16)")
	auto := flag.Bool("auto", false, "hold them as float16 or bfloat16 if the file stores them so (--weight-dtype auto)")
	cache := flag.String("weights-cache", "", "a weights cache directory (loader.Options.WeightsCache)")
	flag.Parse()

	if *mode == "bandwidth" {
		emit(readBandwidth())
		return
	}
	// The profile covers the load too, which -mode load measures.
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		defer pprof.StopCPUProfile()
	}

	if *memprofile != "" {
		defer writeMemProfile(*memprofile)
	}

	start := time.Now()
	m, err := loader.LoadWith(*dir, loader.Options{Float16: *f16, AsStored: *auto, WeightsCache: *cache})
	if err != nil {
		fail(err)
	}
	loadS := time.Since(start).Seconds()
	vocab = m.Config.VocabSize
	ctx := context.Background()
	if *mode == "load" {
		const prompt, steps = 4, 1
		decode(ctx, m, 1, prompt, steps)
		// The KV cache's positions in use: each is a key and a value of
		// KVHeads·HeadDim floats per layer (NEmbd for GPT-2; a grouped-
		// query model such as Qwen2.5-0.5B holds 128 where NEmbd is 896).
		kv := (prompt + steps) * 2 * m.Config.NLayer * m.Config.KVHeads() * m.Config.HeadDim() * 4
		emit(map[string]any{"load_s": loadS, "peak_rss": procstat.PeakRSS(), "kv_bytes": kv, "weights_cache": m.WeightsCache})
		return // (the deferred StopCPUProfile writes the profile)
	}
	decode(ctx, m, 1, 4, 2) // warm-up
	held := m.WeightsDType + " weights as stored"
	if *f16 {
		held = "weights held as float16"
	}
	out := map[string]any{"impl": fmt.Sprintf("%s GOMAXPROCS=%d %s, %s", runtime.Version(), runtime.GOMAXPROCS(0), kernels.Name(), held),
		"decode_bytes": m.DecodeBytes()}
	if *only == "" || *only == "prefill" {
		ids := toks(*prefill, 0)
		best := math.Inf(1)
		c := m.NewCache() // allocated once and reset, as a server reuses caches
		for range *reps {
			c.Reset()
			t := time.Now()
			if _, err := m.Forward(ctx, c, ids, model.ForwardOptions{}); err != nil {
				fail(err)
			}
			best = min(best, time.Since(t).Seconds())
		}
		out["prefill_tps"] = float64(*prefill) / best
	}
	if *only == "" || *only == "decode1" {
		out["decode1_tps"] = float64(*steps) / min(decode(ctx, m, 1, *prompt, *steps), decode(ctx, m, 1, *prompt, *steps))
	}
	if *only == "" || *only == "decodeN" {
		for _, s := range strings.Split(*batches, ",") {
			B, err := strconv.Atoi(s)
			if err != nil {
				fail(err)
			}
			out[fmt.Sprintf("decode%d_tps", B)] = float64(B**steps) / decode(ctx, m, B, *prompt, *steps)
		}
	}
	emit(out)
}

// vocab is the model's vocabulary size, the modulus of toks (GPT-2's
// 50257 for the GPT-2 benchmark model).
var vocab = 50257

// toks is the peer's fixed arithmetic sequence of ids.
func toks(n, seed int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = (seed*7919 + i*104729) % vocab
	}
	return ids
}

// decode prefills B caches with prompt tokens each, then times steps
// batched decode steps of one token per sequence.
func decode(ctx context.Context, m *model.Model, B, prompt, steps int) float64 {
	caches := make([]*kvcache.Cache, B)
	next := make([][]int, B)
	for b := range caches {
		caches[b] = m.NewCache()
		if _, err := m.Forward(ctx, caches[b], toks(prompt, 1+b), model.ForwardOptions{}); err != nil {
			fail(err)
		}
		next[b] = toks(steps, 100+b)
	}
	step := make([]int, B)
	t := time.Now()
	for s := range steps {
		for b := range step {
			step[b] = next[b][s]
		}
		if _, err := m.DecodeBatch(ctx, caches, step); err != nil {
			fail(err)
		}
	}
	return time.Since(t).Seconds()
}

func emit(v map[string]any) {
	b, err := json.Marshal(v)
	if err != nil {
		fail(err)
	}
	fmt.Println(string(b))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gobench:", err)
	os.Exit(1)
}

// writeMemProfile writes the allocations since the start to path (after a
// collection: the profile stands as of the last one).
func writeMemProfile(path string) {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		fail(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fail(err)
	}
}
