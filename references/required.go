package references

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// required lists, per JSON object of the manifest, the keys that must be
// present and non-null: encoding/json silently zeroes missing fields, and a
// zero that looks valid (temperature 0, token 0) must not hide an omission.
var required = struct {
	top, model, cases, tensors, sampling, greedy, generation, results, loglikelihood []string
}{
	top:           []string{"format_version", "model", "cases", "tensors"},
	model:         []string{"weights_file", "weights_sha256", "config"},
	cases:         []string{"id", "tokens"},
	tensors:       []string{"case", "checkpoint", "name", "file", "dtype", "shape"},
	sampling:      []string{"name", "temperature", "top_k", "top_p", "min_p", "repetition_penalty"},
	greedy:        []string{"case", "token"},
	generation:    []string{"n", "results"},
	results:       []string{"case", "tokens", "stop_reason"},
	loglikelihood: []string{"context_tokens", "continuation_tokens", "ll"},
}

// checkRequired reports the first missing required key. Type errors are left
// to the typed decode, which describes them better.
func checkRequired(data []byte, path string) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return jsonError(path, err)
	}
	// format_version first: a future format may have other required keys.
	if v, ok := top["format_version"]; ok && !isNull(v) {
		var fv int
		if err := json.Unmarshal(v, &fv); err != nil || fv != FormatVersion {
			return errorf(path, "format_version", "unsupported version %s, this build reads version %d", v, FormatVersion)
		}
	}
	if err := missing(top, required.top, path, ""); err != nil {
		return err
	}
	var model map[string]json.RawMessage
	if json.Unmarshal(top["model"], &model) != nil {
		return nil
	}
	if err := missing(model, required.model, path, "model"); err != nil {
		return err
	}
	arrays := []struct {
		key  string
		keys []string
	}{
		{"cases", required.cases},
		{"tensors", required.tensors},
		{"sampling", required.sampling},
		{"greedy", required.greedy},
		{"loglikelihood", required.loglikelihood},
	}
	for _, a := range arrays {
		if err := missingInArray(top[a.key], a.keys, path, a.key); err != nil {
			return err
		}
	}
	if g, ok := top["generation"]; ok && !isNull(g) {
		var gen map[string]json.RawMessage
		if json.Unmarshal(g, &gen) != nil {
			return nil
		}
		if err := missing(gen, required.generation, path, "generation"); err != nil {
			return err
		}
		return missingInArray(gen["results"], required.results, path, "generation.results")
	}
	return nil
}

func missingInArray(raw json.RawMessage, keys []string, path, field string) error {
	var objs []map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &objs) != nil {
		return nil
	}
	for i, o := range objs {
		if err := missing(o, keys, path, fmt.Sprintf("%s[%d]", field, i)); err != nil {
			return err
		}
	}
	return nil
}

func missing(obj map[string]json.RawMessage, keys []string, path, prefix string) error {
	for _, k := range keys {
		if v, ok := obj[k]; !ok || isNull(v) {
			field := k
			if prefix != "" {
				field = prefix + "." + k
			}
			return errorf(path, field, "missing (required by FORMAT.md)")
		}
	}
	return nil
}

func isNull(v json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}
