package server

import "slices"

// settingFields are the sampling settings fields.settings reads, the
// native generating routes' share of docs/api.md's "Sampling settings".
var settingFields = []string{"max_tokens", "temperature", "top_p", "top_k", "min_p",
	"repetition_penalty", "presence_penalty", "frequency_penalty", "logit_bias", "seed", "stop"}

// The fields each native route reads (fields.constraint reads
// constraintFields); any other is a 400 naming it, as on the OpenAI
// routes, or with --lenient a warning logged once per name.
var (
	executeFields       = slices.Concat(settingFields, []string{"job_id", "prompt"}, constraintFields)
	generateFields      = slices.Concat(settingFields, []string{"prompts"}, constraintFields)
	loglikelihoodFields = []string{"prompts", "continuations"}
)
