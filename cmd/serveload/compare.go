package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// compare prints, level by level, the ratios of two --json summaries of
// the same scenario, oriented like bench-llamacpp's tables: above 1
// favours the first (tokens/s first over second; latencies and memory
// second over first).
func compare(w io.Writer, aPath, bPath string) error {
	a, err := readSummary(aPath)
	if err != nil {
		return err
	}
	b, err := readSummary(bPath)
	if err != nil {
		return err
	}
	if a.Scenario != b.Scenario {
		return fmt.Errorf("%s is %s, %s is %s", aPath, a.Scenario, bPath, b.Scenario)
	}
	fmt.Fprintf(w, "%s: %s over %s (above 1 favours %s)\n", a.Scenario, a.Label, b.Label, a.Label)
	head := []string{"clients", "tok/s", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99"}
	if a.Scenario == longPrompt {
		head = append(head, "long TTFT", "ITL p99 during")
	}
	head = append(head, "HWM")
	rows := [][]string{head}
	for _, la := range a.Levels {
		var lb *level
		for i := range b.Levels {
			if b.Levels[i].Clients == la.Clients {
				lb = &b.Levels[i]
			}
		}
		if lb == nil {
			continue
		}
		row := []string{strconv.Itoa(la.Clients), ratio(la.TokensPerSec, lb.TokensPerSec),
			ratio(lb.TTFTp50, la.TTFTp50), ratio(lb.TTFTp99, la.TTFTp99),
			ratio(lb.ITLp50, la.ITLp50), ratio(lb.ITLp99, la.ITLp99)}
		if a.Scenario == longPrompt {
			row = append(row, ratioP(lb.LongTTFT, la.LongTTFT), ratioP(lb.DuringITLp99, la.DuringITLp99))
		}
		hwm := "-"
		if la.HWMBytes != nil && lb.HWMBytes != nil {
			hwm = ratio(num(*lb.HWMBytes), num(*la.HWMBytes))
		}
		rows = append(rows, append(row, hwm))
	}
	writeAligned(w, rows)
	return nil
}

func ratio(x, y num) string {
	r := float64(x) / float64(y)
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "-"
	}
	return strconv.FormatFloat(r, 'f', 2, 64) + "x"
}

func ratioP(x, y *num) string {
	if x == nil || y == nil {
		return "-"
	}
	return ratio(*x, *y)
}

func readSummary(path string) (summary, error) {
	var s summary
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
