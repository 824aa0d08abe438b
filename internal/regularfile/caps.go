package regularfile

import (
	"errors"
	"fmt"
	"io"
)

// Caps on the text files of a model directory, far above what any real
// model ships, so that a hostile file is refused before it is parsed
// rather than after it has taken gigabytes: a 256k-token tokenizer.json
// is 20-30 MB, its vocab.json and merges.txt a few MB each, a
// tokenizer_config.json with thousands of added tokens a few MB, a
// config.json a few KB and a chat template tens of KB.
const (
	MaxConfigJSON      = 16 << 20
	MaxTokenizerJSON   = 256 << 20
	MaxTokenizerConfig = 64 << 20
	MaxVocabJSON       = 64 << 20
	MaxMergesTxt       = 64 << 20
	MaxChatTemplate    = 1 << 20
)

// ErrTooLarge is wrapped when a file is larger than its cap.
var ErrTooLarge = errors.New("larger than any real one")

// ReadFileMax is ReadFile of a file of at most max bytes; a larger one is
// an error naming the file and the cap, wrapping ErrTooLarge.
func ReadFileMax(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := func(n string) error {
		return fmt.Errorf("%s: %s bytes, more than the cap of %d (%s): %w", path, n, max, mib(max), ErrTooLarge)
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		return nil, tooLarge(fmt.Sprint(fi.Size()))
	}
	// The file may grow after Stat: read one byte past the cap at most.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, tooLarge("over " + fmt.Sprint(max))
	}
	return b, nil
}

func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
