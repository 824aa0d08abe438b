package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/llorch/llorch-check/chat"
	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/model"
)

// ChatFormatter renders chat messages into a prompt: the model's own chat
// template (ModelChatTemplate), a --chat-template file, or GPT-2's plain
// default.
type ChatFormatter interface {
	// Name says which template it is, for /v1/models.
	Name() string
	// Format renders the conversation, ending where the assistant's reply
	// begins. A *chat.RaisedError is the template refusing the
	// conversation (a 400).
	Format(msgs []ChatMessage) (string, error)
	// Special says the prompt writes the model's special tokens as text
	// ("<s>", "<|im_start|>"), as a model's Jinja template does: it is
	// encoded with them as single ids and nothing prepended, as Hugging
	// Face's apply_chat_template tokenizes.
	Special() bool
}

// DefaultChatTemplate turns chat messages into GPT-2's prompt: GPT-2 was
// never trained on a chat format, so one plain line per message
// ("role: content") and a final "assistant:" for the model to continue.
const DefaultChatTemplate = `{{range .Messages}}{{.Role}}: {{.Content}}
{{end}}assistant:`

// ChatMessage is one message as a chat template sees it.
type ChatMessage struct {
	Role    string // system, developer, user or assistant
	Content string // text parts joined by "\n"
	Name    string // the participant's name, when given
}

// ChatData is what a Go chat template is executed with.
type ChatData struct {
	Messages []ChatMessage
}

// goTemplate is a Go text/template over ChatData.
type goTemplate struct{ t *template.Template }

func (g goTemplate) Name() string  { return g.t.Name() }
func (g goTemplate) Special() bool { return false }

func (g goTemplate) Format(msgs []ChatMessage) (string, error) {
	var b strings.Builder
	if err := g.t.Execute(&b, ChatData{Messages: msgs}); err != nil {
		return "", fmt.Errorf("chat template %s: %w", g.t.Name(), err)
	}
	return b.String(), nil
}

// ParseChatTemplate parses a Go text/template for chat prompts and
// renders a sample conversation with it, so that a template naming a
// field that does not exist fails at start-up, not on the first request.
func ParseChatTemplate(name, text string) (ChatFormatter, error) {
	t, err := template.New(name).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	g := goTemplate{t}
	sample := []ChatMessage{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello", Name: "ann"}}
	if _, err := g.Format(sample); err != nil {
		return nil, err
	}
	return g, nil
}

// defaultChatTemplate is DefaultChatTemplate parsed.
var defaultChatTemplate = goTemplate{template.Must(template.New("default").Parse(DefaultChatTemplate))}

// jinjaTemplate is a model's own Jinja chat template, with the bos_token
// and eos_token its tokenizer declares.
type jinjaTemplate struct {
	name string
	t    *chat.Template
	opt  chat.Options
}

func (j jinjaTemplate) Name() string  { return j.name }
func (j jinjaTemplate) Special() bool { return true }

// Format renders with add_generation_prompt, as OpenAI-compatible servers
// (vLLM, llama.cpp's) do for a chat completion. OpenAI's "developer" role
// is the system prompt to templates that predate it; names are not
// passed, as Hugging Face's templates do not read them.
func (j jinjaTemplate) Format(msgs []ChatMessage) (string, error) {
	list := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		list[i] = chat.Message{Role: role, Content: m.Content}
	}
	opt := j.opt
	opt.AddGenerationPrompt = true
	return j.t.Render(list, opt)
}

// JinjaChatTemplate parses a Jinja chat template (serve --chat-template
// FILE.jinja) to render with the bos_token and eos_token of the model's
// own template (own, from ModelChatTemplate; none if nil).
func JinjaChatTemplate(name, text string, own ChatFormatter) (ChatFormatter, error) {
	t, err := chat.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("chat template %s: %w", name, err)
	}
	var opt chat.Options
	if j, ok := own.(jinjaTemplate); ok {
		opt = j.opt
	}
	return checked(jinjaTemplate{name: name, t: t, opt: opt})
}

// ModelChatTemplate is the chat template the model ships: a GGUF file's
// tokenizer.chat_template; for an HF directory its tokenizer_config.json
// (or chat_template.jinja), else the tokenizer GGUF it keeps beside the
// weights. Nil and no error when the model has none (GPT-2).
func ModelChatTemplate(m *model.Model) (ChatFormatter, error) {
	if m.Format == model.FormatGGUF {
		return ggufChatTemplate(m.WeightsPath)
	}
	cfg := filepath.Join(m.Dir, "tokenizer_config.json")
	if _, err := os.Stat(cfg); err == nil {
		t, opt, err := chat.FromTokenizerConfig(cfg)
		switch {
		case err == nil:
			return checked(jinjaTemplate{name: filepath.Base(cfg), t: t, opt: opt})
		case !errors.Is(err, chat.ErrNoTemplate):
			return nil, err
		}
	}
	files, _ := filepath.Glob(filepath.Join(m.Dir, "*.gguf"))
	sort.Strings(files)
	for _, p := range files {
		if f, err := ggufChatTemplate(p); f != nil || err != nil {
			return f, err
		}
	}
	return nil, nil
}

func ggufChatTemplate(path string) (ChatFormatter, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, opt, err := chat.FromGGUF(f)
	switch {
	case errors.Is(err, chat.ErrNoTemplate):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return checked(jinjaTemplate{name: filepath.Base(path) + ":tokenizer.chat_template", t: t, opt: opt})
}

// checked renders a one-message conversation, so that a template that
// cannot render even that fails at start-up, not on every request.
func checked(j jinjaTemplate) (ChatFormatter, error) {
	if _, err := j.Format([]ChatMessage{{Role: "user", Content: "Hello"}}); err != nil {
		return nil, fmt.Errorf("chat template %s: %w", j.name, err)
	}
	return j, nil
}
