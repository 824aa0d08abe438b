package loader

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
)

// A cache is keyed by its weights' content and checked whole on every
// read: reproducible images normalise modification times, so a model
// changed in place at the same size and time kept its old cache, and
// bytes overwritten inside a cache file were used as weights (issue 43
// item 4). The key holds the weights' sha256 (references.WeightsSHA256,
// what a reference set records, kept for the life of the process) and the
// header a checksum of itself and every byte of data after it.
//
// The checksum is CRC-32C, not a cryptographic hash: whoever can write
// the cache file can write its checksum too, so it guards against
// damage (a disk, a copy cut short, a stray write), for which CRC-32C
// with the CPU's instruction runs at several GB/s, 4-5x sha256 here.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// cacheDigest is the CRC-32C of the header h without its digest, then of
// data (every byte after the header's page).
func cacheDigest(h cacheHeader, data [][]byte) (string, error) {
	h.Digest = ""
	js, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	sum := crc32.Checksum(js, castagnoli)
	for _, b := range data {
		sum = crc32.Update(sum, castagnoli, b)
	}
	return fmt.Sprintf("crc32c:%08x", sum), nil
}

// checkCacheDigest fails unless data and the header h match h's digest.
func checkCacheDigest(h cacheHeader, data []byte) error {
	sum, err := cacheDigest(h, [][]byte{data})
	if err != nil {
		return err
	}
	if sum != h.Digest {
		return fmt.Errorf("damaged: its digest is %s, its header records %q (rewritten after a full load)", sum, h.Digest)
	}
	return nil
}
