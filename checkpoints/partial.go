package checkpoints

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// notDumped records that a partial dump left out name at checkpoint cp.
func (r *Report) notDumped(cp int, name string) {
	if r.NotDumped == nil {
		r.NotDumped = map[int][]string{}
	}
	if strings.HasPrefix(name, "sampling_") {
		name = "sampling_*"
	}
	if !slices.Contains(r.NotDumped[cp], name) {
		r.NotDumped[cp] = append(r.NotDumped[cp], name)
	}
}

// notDumpedLine says what a partial dump left out, or "" when nothing.
func (r *Report) notDumpedLine() string {
	if len(r.NotDumped) == 0 {
		return ""
	}
	nums := make([]int, 0, len(r.NotDumped))
	for n := range r.NotDumped {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	parts := make([]string, len(nums))
	for i, n := range nums {
		parts[i] = fmt.Sprintf("%d %s", n, strings.Join(r.NotDumped[n], ", "))
	}
	return "partial:    a partial dump (FORMAT.md); not in it, not compared: " + strings.Join(parts, "; ")
}
