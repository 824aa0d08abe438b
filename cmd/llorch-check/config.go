package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/llorch/llorch-check/internal/regularfile"
)

// Where a setting's value came from, highest precedence first.
const (
	fromFlag    = "flag"
	fromEnv     = "env"
	fromFile    = "file"
	fromDefault = "default"
)

// envName is a flag's environment variable: LLORCH_ and the name in upper
// case with dashes as underscores (--max-queue is LLORCH_MAX_QUEUE).
func envName(flag string) string {
	return "LLORCH_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// layerSettings gives every flag of fl not set on the command line its
// value from the environment, else from the YAML file (empty: none), else
// its default, and returns where each came from. A file key that names no
// flag, or a value a flag refuses, is an error naming the key, variable or
// file. The skip flags (the config file's own, one-shot actions) are not
// read from either.
func layerSettings(fl *pflag.FlagSet, file string, getenv func(string) string, skip ...string) (map[string]string, error) {
	values, err := readSettingsFile(file, fl, skip)
	if err != nil {
		return nil, err
	}
	source := map[string]string{}
	var errs []error
	fl.VisitAll(func(f *pflag.Flag) {
		switch {
		case f.Changed:
			source[f.Name] = fromFlag
		case slices.Contains(skip, f.Name):
			source[f.Name] = fromDefault
		case getenv(envName(f.Name)) != "":
			if err := fl.Set(f.Name, getenv(envName(f.Name))); err != nil {
				errs = append(errs, fmt.Errorf("$%s: %w", envName(f.Name), err))
			}
			source[f.Name] = fromEnv
		case values[f.Name] != nil:
			if err := setFromYAML(fl, f.Name, values[f.Name]); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", file, f.Name, err))
			}
			source[f.Name] = fromFile
		default:
			source[f.Name] = fromDefault
		}
	})
	return source, errors.Join(errs...)
}

// readSettingsFile reads a YAML mapping of flag names (dashes or
// underscores) to values.
func readSettingsFile(file string, fl *pflag.FlagSet, skip []string) (map[string]*yaml.Node, error) {
	if file == "" {
		return nil, nil
	}
	data, err := regularfile.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	out := map[string]*yaml.Node{}
	if doc.Kind == 0 {
		return out, nil // an empty file sets nothing
	}
	if doc.Kind != yaml.DocumentNode || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: want a mapping of setting names to values", file)
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, val := m.Content[i].Value, m.Content[i+1]
		name := strings.ReplaceAll(key, "_", "-")
		if fl.Lookup(name) == nil || slices.Contains(skip, name) {
			return nil, fmt.Errorf("%s:%d: unknown setting %q (the settings are serve's flags: see serve --help)", file, m.Content[i].Line, key)
		}
		if out[name] != nil {
			return nil, fmt.Errorf("%s:%d: setting %q given twice", file, m.Content[i].Line, key)
		}
		out[name] = val
	}
	return out, nil
}

// setFromYAML sets a flag from a scalar, or a list joined by commas (as
// --cors-origins takes them).
func setFromYAML(fl *pflag.FlagSet, name string, v *yaml.Node) error {
	switch v.Kind {
	case yaml.ScalarNode:
		return fl.Set(name, v.Value)
	case yaml.SequenceNode:
		var items []string
		for _, it := range v.Content {
			if it.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: want a list of values", it.Line)
			}
			items = append(items, it.Value)
		}
		return fl.Set(name, strings.Join(items, ","))
	}
	return fmt.Errorf("line %d: want a value or a list of values", v.Line)
}

// printSettings writes every setting with its value and source, secrets
// redacted, in flag order. A hidden flag (a test's or a demo's, absent
// from --help) is listed only when something set it.
func printSettings(w io.Writer, fl *pflag.FlagSet, source map[string]string, secret ...string) {
	fl.VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" || (f.Hidden && source[f.Name] == fromDefault) {
			return
		}
		v := f.Value.String()
		if slices.Contains(secret, f.Name) && v != "" {
			v = "<redacted>"
		}
		fmt.Fprintf(w, "%-20s %-30s # %s\n", f.Name, v, source[f.Name])
	})
}
