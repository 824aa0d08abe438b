package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// num is a figure that may be missing (NaN): JSON null, "-" in tables.
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(math.Round(float64(n)*1000) / 1000)
}

func (n *num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = num(math.NaN())
		return nil
	}
	var f float64
	err := json.Unmarshal(b, &f)
	*n = num(f)
	return err
}

// level is one row of the table.
type level struct {
	Clients      int            `json:"clients"`
	Requests     int            `json:"requests"`
	OK           int            `json:"requests_ok"`
	Tokens       int            `json:"generated_tokens"`
	WallSeconds  num            `json:"wall_seconds"`
	TokensPerSec num            `json:"tokens_per_second"`
	TTFTp50      num            `json:"ttft_p50_ms"`
	TTFTp99      num            `json:"ttft_p99_ms"`
	ITLp50       num            `json:"itl_p50_ms"`
	ITLp99       num            `json:"itl_p99_ms"`
	Errors       map[string]int `json:"errors"`
	CachedTokens *int           `json:"cached_tokens"` // nil: the server did not say
	RSSBytes     *int64         `json:"rss_bytes"`     // VmRSS after the level, with --pid
	HWMBytes     *int64         `json:"hwm_bytes"`     // VmHWM (peak RSS so far), with --pid
	KVPeakBytes  *int64         `json:"kv_peak_bytes"` // the KV cache's peak so far, where the server reports it
	BoundBytes   *int64         `json:"bound_bytes"`   // memoryBound of --model-bytes and KVPeakBytes

	// long-prompt only: the long request's time to first token (queueing
	// and prefill) and the short streams' gaps that overlap it.
	LongTTFT      *num `json:"long_ttft_ms,omitempty"`
	DuringITLp99  *num `json:"itl_p99_during_long_ms,omitempty"`
	DuringITLmax  *num `json:"itl_max_during_long_ms,omitempty"`
	DuringGapsCnt *int `json:"gaps_during_long,omitempty"`
}

// summary is the --json file: the run's settings and its rows.
type summary struct {
	Label        string  `json:"label"`
	URL          string  `json:"url"`
	Model        string  `json:"model"`
	Scenario     string  `json:"scenario"`
	PromptTokens int     `json:"prompt_tokens"`
	MaxTokens    int     `json:"max_tokens"`
	PrefixTokens int     `json:"prefix_tokens,omitempty"`
	LongTokens   int     `json:"long_tokens,omitempty"`
	IgnoreEOS    bool    `json:"ignore_eos"`
	Started      string  `json:"started"`
	Levels       []level `json:"levels"`
}

// summarize turns a level's results into its row.
func summarize(n int, wall time.Duration, rs []result, s settings) level {
	l := level{Clients: n, Requests: len(rs), Errors: map[string]int{}, WallSeconds: num(wall.Seconds())}
	var ttfts, gaps []float64
	var cached int
	anyCached := false
	var longRes *result
	for i, r := range rs {
		if r.ok() {
			l.OK++
		} else {
			l.Errors[r.errKind]++
		}
		l.Tokens += r.tokens
		if r.hasCache {
			cached += r.cached
			anyCached = true
		}
		if r.req.long {
			longRes = &rs[i]
			continue // its TTFT is the long column's, not the short prompts'
		}
		if t, ok := r.ttft(); ok {
			ttfts = append(ttfts, ms(t))
		}
		for k := 1; k < len(r.chunks); k++ {
			gaps = append(gaps, ms(r.chunks[k]-r.chunks[k-1]))
		}
	}
	l.TokensPerSec = num(float64(l.Tokens) / wall.Seconds())
	l.TTFTp50, l.TTFTp99 = num(percentile(ttfts, 50)), num(percentile(ttfts, 99))
	l.ITLp50, l.ITLp99 = num(percentile(gaps, 50)), num(percentile(gaps, 99))
	if anyCached {
		l.CachedTokens = &cached
	}
	if s.scenario == longPrompt {
		during := gapsDuring(rs, longRes)
		lt, p99, mx, cnt := num(math.NaN()), num(percentile(during, 99)), num(percentile(during, 100)), len(during)
		if longRes != nil {
			if t, ok := longRes.ttft(); ok {
				lt = num(ms(t))
			}
		}
		l.LongTTFT, l.DuringITLp99, l.DuringITLmax, l.DuringGapsCnt = &lt, &p99, &mx, &cnt
	}
	return l
}

// gapsDuring is every gap between successive text chunks of the short
// streams that overlaps the long request's wait for its first token (from
// sending it to its first chunk, or to its end if none came): where its
// prefill can stall the others' decoding.
func gapsDuring(rs []result, long *result) []float64 {
	if long == nil {
		return nil
	}
	from, to := long.sent, long.end
	if len(long.chunks) > 0 {
		to = long.chunks[0]
	}
	var out []float64
	for _, r := range rs {
		if r.req.long {
			continue
		}
		for k := 1; k < len(r.chunks); k++ {
			a, b := r.chunks[k-1], r.chunks[k]
			if b > from && a < to {
				out = append(out, ms(b-a))
			}
		}
	}
	return out
}

// f formats a figure with d decimals, "-" when missing.
func f(n num, d int) string {
	if math.IsNaN(float64(n)) {
		return "-"
	}
	return strconv.FormatFloat(float64(n), 'f', d, 64)
}

func fp(n *num, d int) string {
	if n == nil {
		return "-"
	}
	return f(*n, d)
}

func mb(b *int64) string {
	if b == nil {
		return "-"
	}
	return strconv.FormatInt(*b>>20, 10)
}

// errorsCell is "0" or the counts by kind, e.g. "429:8,stream:1".
func errorsCell(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	return strings.Join(parts, ",")
}

// printTable writes the run's table: one row per level.
func printTable(w io.Writer, sm summary) {
	fmt.Fprintf(w, "%s: %s, %s, prompt %d words, max_tokens %d", sm.Label, sm.Scenario, sm.URL, sm.PromptTokens, sm.MaxTokens)
	switch sm.Scenario {
	case sharedPrefix:
		fmt.Fprintf(w, ", shared prefix %d words", sm.PrefixTokens)
	case longPrompt:
		fmt.Fprintf(w, ", long prompt %d words", sm.LongTokens)
	}
	fmt.Fprintf(w, ", ignore_eos %v\n", sm.IgnoreEOS)
	head := []string{"clients", "requests", "tokens", "tok/s", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "errors"}
	switch sm.Scenario {
	case sharedPrefix:
		head = append(head, "cached")
	case longPrompt:
		head = append(head, "long TTFT", "ITL p99 during", "max during")
	}
	head = append(head, "RSS MB", "HWM MB", "KV peak MB", "bound MB")
	rows := [][]string{head}
	for _, l := range sm.Levels {
		row := []string{strconv.Itoa(l.Clients), strconv.Itoa(l.Requests), strconv.Itoa(l.Tokens),
			f(l.TokensPerSec, 1), f(l.TTFTp50, 0), f(l.TTFTp99, 0), f(l.ITLp50, 1), f(l.ITLp99, 1), errorsCell(l.Errors)}
		switch sm.Scenario {
		case sharedPrefix:
			c := "-"
			if l.CachedTokens != nil {
				c = strconv.Itoa(*l.CachedTokens)
			}
			row = append(row, c)
		case longPrompt:
			row = append(row, fp(l.LongTTFT, 0), fp(l.DuringITLp99, 1), fp(l.DuringITLmax, 1))
		}
		row = append(row, mb(l.RSSBytes), mb(l.HWMBytes), mb(l.KVPeakBytes), mb(l.BoundBytes))
		rows = append(rows, row)
	}
	writeAligned(w, rows)
	fmt.Fprintln(w, "(times in ms; tok/s: generated tokens over the level's wall time; ITL: gap between successive text chunks)")
}

// writeAligned right-aligns each column to its widest cell.
func writeAligned(w io.Writer, rows [][]string) {
	width := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(strings.Repeat(" ", width[i]-len(c)) + c)
		}
		fmt.Fprintln(w, b.String())
	}
}
