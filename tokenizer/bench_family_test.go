package tokenizer

import (
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkFamilyEncode is Encode's throughput on 1 MB of mixed prose and
// code for each SentencePiece and byte-level vocabulary: Llama 3's (128256
// tokens, a regex pre-tokenizer, pieces cached), Mistral's (32000,
// SentencePiece merged whole) and Gemma 3's (262144, SentencePiece merged
// whole between its user-defined tokens, found by the trie).
func BenchmarkFamilyEncode(b *testing.B) {
	corpus := benchCorpus(b, 1<<20)
	for _, name := range []string{"llama-bpe", "mistral-hf", "gemma3"} {
		b.Run(name, func(b *testing.B) {
			var tok *Tokenizer
			if name == "gemma3" {
				tok = loadGemma3(b)
			} else {
				tok = llamaTok(b, name)
			}
			n := len(tok.Encode(corpus))
			b.SetBytes(int64(len(corpus)))
			b.ResetTimer()
			for b.Loop() {
				tok.Encode(corpus)
			}
			b.ReportMetric(float64(len(corpus))/float64(n), "bytes/token")
		})
	}
}

// BenchmarkFamilyLoad is the time and the memory a tokenizer.json takes to
// load: the heap allocated while loading (alloc-MB) and what stays live
// after (live-MB).
func BenchmarkFamilyLoad(b *testing.B) {
	for _, name := range []string{"llama-bpe", "gemma3"} {
		b.Run(name, func(b *testing.B) {
			var data []byte
			path := filepath.Join(gemma3Models, "tokenizer.json")
			if name == "gemma3" {
				gemma3Dir(b)
			} else {
				path = filepath.Join(llamaTestdata, name, "tokenizer.json.gz")
				data = gunzip(b, path)
			}
			var before, after runtime.MemStats
			var tok *Tokenizer
			for b.Loop() {
				runtime.GC()
				runtime.ReadMemStats(&before)
				var err error
				if data != nil {
					tok, err = parseTokenizerJSON(data, path)
				} else {
					tok, err = LoadTokenizerJSON(path)
				}
				if err != nil {
					b.Fatal(err)
				}
				runtime.ReadMemStats(&after)
			}
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), "alloc-MB")
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "live-MB")
			runtime.KeepAlive(tok)
		})
	}
}
