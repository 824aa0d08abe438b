package server_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"net/mail"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// zodSchemas are the schemas zod (through zod-to-json-schema) writes for
// its common refinements, each as the one property of an object, with a
// check of the value written apart from the grammar: big.Rat for bounds,
// net/mail, time.Parse and Go's regexp.
var zodSchemas = []struct {
	name   string
	schema map[string]any
	check  func(v any) error
}{
	{"int().positive()", map[string]any{"type": "integer", "exclusiveMinimum": 0}, numberCheck(true, func(x *big.Rat) bool { return x.Sign() > 0 })},
	{"int().min(18).max(120)", map[string]any{"type": "integer", "minimum": 18, "maximum": 120}, numberCheck(true, func(x *big.Rat) bool {
		return x.Cmp(big.NewRat(18, 1)) >= 0 && x.Cmp(big.NewRat(120, 1)) <= 0
	})},
	{"number().nonnegative().max(5)", map[string]any{"type": "number", "minimum": 0, "maximum": 5}, numberCheck(false, func(x *big.Rat) bool {
		return x.Sign() >= 0 && x.Cmp(big.NewRat(5, 1)) <= 0
	})},
	{"number().positive()", map[string]any{"type": "number", "exclusiveMinimum": 0}, numberCheck(false, func(x *big.Rat) bool { return x.Sign() > 0 })},
	{"string().email()", map[string]any{"type": "string", "format": "email"}, stringCheck(func(s string) error {
		a, err := mail.ParseAddress(s)
		if err == nil && a.Address != s {
			err = fmt.Errorf("read as %q", a.Address)
		}
		return err
	})},
	{"string().uuid()", map[string]any{"type": "string", "format": "uuid"}, stringCheck(regexpCheck(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`))},
	{"string().datetime()", map[string]any{"type": "string", "format": "date-time"}, stringCheck(func(s string) error {
		_, err := time.Parse(time.RFC3339, s)
		return err
	})},
	{"string().regex()", map[string]any{"type": "string", "pattern": `^[A-Z]{3}-\d{2}(x|yz)?$`}, stringCheck(regexpCheck(`^[A-Z]{3}-\d{2}(x|yz)?$`))},
	{"string().min(2).max(5)", map[string]any{"type": "string", "minLength": 2, "maxLength": 5}, stringCheck(func(s string) error {
		if n := len([]rune(s)); n < 2 || n > 5 {
			return fmt.Errorf("%d characters", n)
		}
		return nil
	})},
	// The hostile combinations of issue #42: a keyword beside enum or
	// allOf holds too.
	{"enum beside type", map[string]any{"enum": []any{"a", 1, 2.5, 22}, "type": "integer"}, numberCheck(true, func(x *big.Rat) bool {
		return x.Cmp(big.NewRat(1, 1)) == 0 || x.Cmp(big.NewRat(22, 1)) == 0
	})},
	{"allOf beside type and bound", map[string]any{"allOf": []any{map[string]any{"type": []any{"integer", "string"}}}, "type": "integer", "maximum": -3}, numberCheck(true, func(x *big.Rat) bool {
		return x.Cmp(big.NewRat(-3, 1)) <= 0
	})},
}

func numberCheck(integer bool, in func(*big.Rat) bool) func(any) error {
	return func(v any) error {
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("%v is not a number", v)
		}
		x, ok := new(big.Rat).SetString(string(n))
		if !ok || integer && !x.IsInt() || !in(x) {
			return fmt.Errorf("%s is out of the schema", n)
		}
		var f float64
		if err := json.Unmarshal([]byte(n), &f); err != nil || !in(new(big.Rat).SetFloat64(f)) {
			return fmt.Errorf("%s parses to %v, out of the schema", n, f)
		}
		return nil
	}
}

func stringCheck(valid func(string) error) func(any) error {
	return func(v any) error {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%v is not a string", v)
		}
		return valid(s)
	}
}

func regexpCheck(pattern string) func(string) error {
	re := regexp.MustCompile(pattern)
	return func(s string) error {
		if !re.MatchString(s) {
			return fmt.Errorf("%q does not match %s", s, pattern)
		}
		return nil
	}
}

// TestZodSchemas: each of zod's refinements (and the hostile keyword
// combinations), asked for through response_format, gives JSON that ends
// on end of text and that an independent check finds valid: on chat in
// 20 of 20 seeded runs on GPT-2 and tiny-llama; on completions in a
// seeded run on every other Llama-family model, whose vocabulary must
// begin and continue each language too (grammar_start.go), and some of
// whose chat templates leave too few of the 128 positions for an answer.
func TestZodSchemas(t *testing.T) {
	for _, s := range everyModel(t) {
		ts := s.ts
		seeds, path, field := 1, "/v1/completions", "text"
		ask := map[string]any{"prompt": "JSON:"}
		if s.name == "tiny-gpt2" || s.name == "tiny-llama" {
			seeds, path, field = 20, "/v1/chat/completions", "message"
			ask = map[string]any{"messages": []map[string]any{{"role": "user", "content": "Answer in JSON."}}}
		}
		for _, z := range zodSchemas {
			t.Run(s.name+"/"+z.name, func(t *testing.T) {
				schema := map[string]any{"type": "object", "properties": map[string]any{"v": z.schema},
					"required": []any{"v"}, "additionalProperties": false, "$schema": "http://json-schema.org/draft-07/schema#"}
				rf := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "zod", "strict": true, "schema": schema}}
				var wg sync.WaitGroup
				busy := make(chan struct{}, 4) // the default Parallel, with no queue
				for seed := range seeds {
					busy <- struct{}{}
					wg.Go(func() {
						defer func() { <-busy }()
						body := map[string]any{"seed": seed, "max_tokens": 90, "response_format": rf}
						maps.Copy(body, ask)
						c := choice0(t, ts.call(t, "POST", path, body, http.StatusOK))
						text, _ := c["text"].(string)
						if field == "message" {
							text = c["message"].(map[string]any)["content"].(string)
						}
						if !assert.Equal(t, "stop", c["finish_reason"], "seed %d: %q", seed, text) {
							return
						}
						var got struct{ V any }
						dec := json.NewDecoder(strings.NewReader(text))
						dec.UseNumber()
						dec.DisallowUnknownFields()
						if assert.NoError(t, dec.Decode(&got), "seed %d: %q", seed, text) {
							assert.NoError(t, z.check(got.V), "seed %d: %q", seed, text)
						}
					})
				}
				wg.Wait()
			})
		}
	}
}
