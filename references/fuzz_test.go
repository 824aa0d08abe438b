package references

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func FuzzParseManifest(f *testing.F) {
	valid, err := json.Marshal(validManifest())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"format_version": 1, "model": {"weights_file": "m", "weights_sha256": "00", "config": {}}, "cases": [null], "tensors": [{}]}`))
	f.Add(bytes.Replace(valid, []byte(`"rows":[0,2]`), []byte(`"rows":[0,9]`), 1))
	f.Add(bytes.Replace(valid, []byte(`"n_head": 2`), []byte(`"n_head": 0`), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, _, err := parseManifest(data, ManifestFile)
		if err != nil {
			return
		}
		// Whatever validates must survive the Writer's own round trip.
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("valid manifest does not marshal: %v", err)
		}
		if _, _, err := parseManifest(again, ManifestFile); err != nil {
			t.Fatalf("valid manifest fails after a round trip: %v\n%s", err, again)
		}
	})
}

// allocSlack covers the decoder's fixed costs (buffers, header, errors).
const allocSlack = 256 << 10

func FuzzReadNPY(f *testing.F) {
	for _, name := range []string{"numpy_f4_2x3.npy", "numpy_f4_2x3x2.npy", "numpy_f4_5.npy", "numpy_f4_v2.npy", "numpy_f8_4.npy"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(rawNPY("<f4", []int{}, f32bytes([]float32{1})))
	f.Add(rawNPY("<f4", []int{0, 3}, nil))
	f.Add(rawNPY("<f4", []int{1 << 20, 1 << 20}, nil))
	f.Add(rawNPY("<f8", []int{2}, f64bytes([]float64{1, nan()})))
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f32, _, err32 := decodeNPY[float32](bytes.NewReader(data), int64(len(data)), nil)
		f64, _, err64 := decodeNPY[float64](bytes.NewReader(data), int64(len(data)), nil)
		runtime.ReadMemStats(&after)
		if err32 == nil && 4*len(f32) > len(data) || err64 == nil && 8*len(f64) > len(data) {
			t.Fatalf("decoded more values than the file holds: %d float32, %d float64 from %d bytes", len(f32), len(f64), len(data))
		}
		// Both decodes together may allocate their outputs, about the size
		// of the input each, plus fixed costs; never what a header claims.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(4*len(data)+allocSlack) {
			t.Fatalf("allocated %d bytes for a %d-byte file", alloc, len(data))
		}
	})
}
