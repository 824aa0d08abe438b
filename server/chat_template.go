package server

import (
	"fmt"
	"strings"
	"text/template"
)

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

// ChatData is what a chat template is executed with.
type ChatData struct {
	Messages []ChatMessage
}

// ParseChatTemplate parses a Go text/template for chat prompts and
// renders a sample conversation with it, so that a template naming a
// field that does not exist fails at start-up, not on the first request.
func ParseChatTemplate(name, text string) (*template.Template, error) {
	t, err := template.New(name).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	sample := ChatData{Messages: []ChatMessage{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello", Name: "ann"}}}
	if _, err := renderChat(t, sample); err != nil {
		return nil, err
	}
	return t, nil
}

func renderChat(t *template.Template, d ChatData) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("chat template %s: %w", t.Name(), err)
	}
	return b.String(), nil
}

// defaultChatTemplate is DefaultChatTemplate parsed.
var defaultChatTemplate = template.Must(template.New("default").Parse(DefaultChatTemplate))
