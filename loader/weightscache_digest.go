package loader

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/llorch/llorch-check/kernels"
)

// A cache is keyed by its weights' content and checked whole on every
// read: reproducible images normalise modification times, so a model
// changed in place at the same size and time kept its old cache, and
// bytes overwritten inside a cache file were used as weights (issue 43
// item 4). The key holds the weights' sha256 (references.WeightsSHA256,
// what a reference set records; weightscache_sha256.go keeps it between
// processes) and the header a checksum of itself and every byte of data
// after it.
//
// The checksum is CRC-32C, not a cryptographic hash: whoever can write
// the cache file can write its checksum too, so it guards against
// damage (a disk, a copy cut short, a stray write), for which CRC-32C
// with the CPU's instruction runs at several GB/s, 4-5x sha256 here.
// The data is summed in chunks of digestChunk bytes, one core a chunk,
// and the digest is the CRC-32C of the header followed by the chunks'
// sums: one core summed a 3.7 GB cache at ~7 GB/s, most of a cached
// load once the sha256 was recalled (notes 41). A load checks the file
// by reading it (fileChunkSums), not through its new mapping: on a Zen 5
// VM the first pass over a freshly mapped 1.2 GB cache summed at 2.5-3.5
// GB/s a core, later passes and reads of the same pages at 10-20 GB/s
// (notes 44), and the pages a run never uses are then never touched.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// digestChunk is the bytes of data each chunk sum covers (the last
// chunk fewer); a variable for tests.
var digestChunk = 64 << 20

// cacheDigest is the CRC-32C of the header h without its digest, then of
// the CRC-32Cs of data's chunks (data is every byte after the header's
// page, in pieces).
func cacheDigest(h cacheHeader, data [][]byte) (string, error) {
	js, err := digestedHeader(h)
	if err != nil {
		return "", err
	}
	return foldDigest(js, chunkSums(data)), nil
}

// digestedHeader is the JSON of h without its digest, as the digest
// covers it.
func digestedHeader(h cacheHeader) ([]byte, error) {
	h.Digest = ""
	return json.Marshal(h)
}

// foldDigest is the digest of a header's JSON js and its data's chunk
// sums.
func foldDigest(js []byte, sums []uint32) string {
	sum := crc32.Checksum(js, castagnoli)
	var b [4]byte
	for _, c := range sums {
		sum = crc32.Update(sum, castagnoli, binary.LittleEndian.AppendUint32(b[:0], c))
	}
	return fmt.Sprintf("crc32c:%08x", sum)
}

// chunkSums is the CRC-32C of each digestChunk bytes of data's pieces
// joined, the chunks shared out over the cores.
func chunkSums(data [][]byte) []uint32 {
	var chunks [][][]byte // each chunk's pieces
	var cur [][]byte
	n := 0
	for _, b := range data {
		for len(b) > 0 {
			take := min(len(b), digestChunk-n)
			cur, n, b = append(cur, b[:take]), n+take, b[take:]
			if n == digestChunk {
				chunks, cur, n = append(chunks, cur), nil, 0
			}
		}
	}
	if n > 0 {
		chunks = append(chunks, cur)
	}
	sums := make([]uint32, len(chunks))
	kernels.ParallelFor(len(chunks), func(i int) {
		var s uint32
		for _, p := range chunks[i] {
			s = crc32.Update(s, castagnoli, p)
		}
		sums[i] = s
	})
	return sums
}

// fileChunkSums is chunkSums of the n bytes of r from start, read a
// piece at a time into a buffer per worker.
func fileChunkSums(r io.ReaderAt, start, n int64) ([]uint32, error) {
	chunk := int64(digestChunk)
	sums := make([]uint32, (n+chunk-1)/chunk)
	errs := make([]error, len(sums))
	piece := min(chunk, 1<<20)
	kernels.ParallelFor(len(sums), func(i int) {
		buf := make([]byte, piece)
		lo, hi := start+int64(i)*chunk, start+min(int64(i+1)*chunk, n)
		var s uint32
		for at := lo; at < hi; at += piece {
			b := buf[:min(piece, hi-at)]
			if _, err := r.ReadAt(b, at); err != nil {
				errs[i] = fmt.Errorf("reading at %d: %w", at, err)
				return
			}
			s = crc32.Update(s, castagnoli, b)
		}
		sums[i] = s
	})
	return sums, errors.Join(errs...)
}

// checkCacheDigest fails unless the n bytes of data from start (every
// byte after the header's page) and the header h match h's digest.
func checkCacheDigest(h cacheHeader, data io.ReaderAt, start, n int64) error {
	js, err := digestedHeader(h)
	if err != nil {
		return err
	}
	sums, err := fileChunkSums(data, start, n)
	if err != nil {
		return err
	}
	if sum := foldDigest(js, sums); sum != h.Digest {
		return fmt.Errorf("damaged: its digest is %s, its header records %q (rewritten after a full load)", sum, h.Digest)
	}
	return nil
}
