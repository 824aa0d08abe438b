package tokenizer

import (
	"testing"

	"github.com/llorch/llorch-check/tokenizer/benchcorpus"
)

// BenchmarkEncode reports throughput (MB/s) on a few MB of mixed English
// prose and code; e2e/bench-tokenizer/run.sh compares it with a peer.
// Warm: the piece cache is filled by earlier iterations, as in a server.
func BenchmarkEncode(b *testing.B) {
	tok := gpt2(b)
	corpus := benchCorpus(b, benchcorpus.DefaultSize)
	b.SetBytes(int64(len(corpus)))
	for b.Loop() {
		tok.Encode(corpus)
	}
}

// BenchmarkEncodeCold empties the cache before each pass: every distinct
// piece is merged once.
func BenchmarkEncodeCold(b *testing.B) {
	tok := gpt2(b)
	corpus := benchCorpus(b, benchcorpus.DefaultSize)
	b.SetBytes(int64(len(corpus)))
	for b.Loop() {
		b.StopTimer()
		tok.cache = newCache()
		b.StartTimer()
		tok.Encode(corpus)
	}
}

// BenchmarkEncodeParallel is Encode from many goroutines, as a server does.
func BenchmarkEncodeParallel(b *testing.B) {
	tok := gpt2(b)
	corpus := benchCorpus(b, 256<<10)
	b.SetBytes(int64(len(corpus)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tok.Encode(corpus)
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	tok := gpt2(b)
	corpus := benchCorpus(b, benchcorpus.DefaultSize)
	ids := tok.Encode(corpus)
	b.SetBytes(int64(len(corpus)))
	for b.Loop() {
		if _, err := tok.Decode(ids); err != nil {
			b.Fatal(err)
		}
	}
}
