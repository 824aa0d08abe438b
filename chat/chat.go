package chat

import (
	"errors"
	"fmt"

	"github.com/ardanlabs/jinja"
)

// Message is one chat message as a template sees it: messages[i].role and
// messages[i].content.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Options are the variables Render passes besides messages.
type Options struct {
	// AddGenerationPrompt asks the template to end with the header of the
	// assistant's next turn (add_generation_prompt).
	AddGenerationPrompt bool
	// BOSToken and EOSToken are bos_token and eos_token; an empty one is
	// left undefined, as Hugging Face does for a tokenizer without it.
	BOSToken, EOSToken string
}

// ErrNoTemplate is wrapped when a tokenizer config or GGUF file has no chat
// template.
var ErrNoTemplate = errors.New("chat: no chat template")

// ErrRaised is matched (errors.Is) by every *RaisedError.
var ErrRaised = errors.New("chat: template raised an exception")

// errPanic is wrapped when the Jinja engine panicked: the template or the
// conversation hit a bug of the engine, not a mistake of the caller.
var errPanic = errors.New("jinja engine panicked")

// RaisedError is what a template's raise_exception(message) returns, such as
// Mistral's "Conversation roles must alternate user/assistant/...": the
// conversation is one the model's template refuses, so a server answers
// 400 with Message.
type RaisedError struct {
	Message string
}

func (e *RaisedError) Error() string { return "chat template: " + e.Message }

// Is makes errors.Is(err, ErrRaised) true.
func (e *RaisedError) Is(target error) bool { return target == ErrRaised }

// Template is a parsed chat template. It is safe for concurrent use.
type Template struct {
	src string
	t   *jinja.Template // src instrumented with the sandbox's guards
	lim Limits
}

// Parse parses a chat template's Jinja source, with Hugging Face's settings
// (trim_blocks and lstrip_blocks).
func Parse(src string) (*Template, error) {
	t, err := parse(src)
	if err != nil {
		return nil, fmt.Errorf("chat: %w", err)
	}
	return t, nil
}

// parse is Parse with errors not prefixed, for the loaders to say where the
// template came from.
func parse(src string) (t *Template, err error) {
	defer recoverPanic(&err, "")
	if len(src) > MaxTemplateBytes {
		return nil, fmt.Errorf("template of %d bytes, at most %d", len(src), MaxTemplateBytes)
	}
	guarded, ok := instrument(src)
	jt, err := jinja.Compile(guarded)
	if err != nil {
		if _, err0 := jinja.Compile(src); err0 != nil || !ok {
			return nil, err0
		}
		return nil, fmt.Errorf("template cannot be sandboxed: %w", err)
	}
	return &Template{src: src, t: jt, lim: DefaultLimits}, nil
}

// MaxTemplateBytes is the largest chat template Parse takes: real ones are
// a few kilobytes, the longest (with tool-calling instructions) tens.
const MaxTemplateBytes = 1 << 20

// WithLimits returns a copy of t whose renders are bounded by lim.
func (t *Template) WithLimits(lim Limits) *Template {
	c := *t
	c.lim = lim
	return &c
}

// Source returns the template's Jinja source.
func (t *Template) Source() string { return t.src }

// Render formats msgs into the prompt, with the variables Hugging Face's
// apply_chat_template passes: messages, add_generation_prompt, tools and
// documents (none), and bos_token and eos_token when set. What the template
// raises comes back as a *RaisedError.
func (t *Template) Render(msgs []Message, opt Options) (out string, err error) {
	const prefix = "chat: render template: "
	defer recoverPanic(&err, prefix)
	list := make([]jinja.Value, len(msgs))
	for i, m := range msgs {
		d := jinja.NewDict()
		d.AsDict().Set("role", jinja.NewString(m.Role))
		d.AsDict().Set("content", jinja.NewString(m.Content))
		list[i] = d
	}
	vars := map[string]jinja.Value{
		"messages":              jinja.NewList(list),
		"add_generation_prompt": jinja.NewBool(opt.AddGenerationPrompt),
		"tools":                 jinja.None(),
		"documents":             jinja.None(),
		"raise_exception":       raiseException,
	}
	if opt.BOSToken != "" {
		vars["bos_token"] = jinja.NewString(opt.BOSToken)
	}
	if opt.EOSToken != "" {
		vars["eos_token"] = jinja.NewString(opt.EOSToken)
	}
	newGuards(t.lim).vars(vars)
	out, err = t.t.RenderValues(vars)
	if err != nil {
		if re, ok := errors.AsType[*RaisedError](err); ok {
			return "", re
		}
		return "", fmt.Errorf(prefix+"%w", err)
	}
	if len(out) > t.lim.MaxOutput {
		return "", fmt.Errorf(prefix+"%w: output of %d bytes, at most %d", ErrLimit, len(out), t.lim.MaxOutput)
	}
	return out, nil
}

// raiseException replaces the engine's raise_exception so that what a
// template raises is told apart from the engine's own errors.
var raiseException = jinja.NewCallable("raise_exception", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	msg := ""
	switch {
	case len(args) == 0:
	case args[0].IsString():
		msg = args[0].AsString()
	default:
		msg = args[0].String()
	}
	return jinja.Undefined(), &RaisedError{Message: msg}
})

// recoverPanic turns a panic of the engine into an error wrapping errPanic,
// after prefix: a template from a model file must not take a server down.
func recoverPanic(err *error, prefix string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf(prefix+"%w: %v", errPanic, r)
	}
}
