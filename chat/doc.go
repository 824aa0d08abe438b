// Package chat formats a chat conversation into a model's prompt with the
// model's own chat template, as Hugging Face's apply_chat_template does in
// transformers (Python) and transformers.js.
//
// A chat template is a Jinja2 program shipped with the model: the
// chat_template of its tokenizer_config.json (or a chat_template.jinja
// beside it), or the tokenizer.chat_template key of a GGUF file. Load one
// with FromTokenizerConfig or FromGGUF, which also return the BOS and EOS
// tokens templates read as bos_token and eos_token, or Parse a source.
// Render then passes what apply_chat_template passes: messages (role and
// content), add_generation_prompt, tools and documents (none; tool calls
// are out of scope), bos_token and eos_token, and raise_exception. What a
// template raises, such as Mistral's "Conversation roles must alternate
// user/assistant/user/assistant/...", comes back as a *RaisedError
// (errors.Is(err, ErrRaised)): the client sent a conversation the model
// does not take, a 400 for a server.
//
//	tpl, opt, err := chat.FromTokenizerConfig(dir + "/tokenizer_config.json")
//	...
//	opt.AddGenerationPrompt = true
//	prompt, err := tpl.Render([]chat.Message{{Role: "user", Content: "Hi"}}, opt)
//
// # Engine
//
// Templates are run by github.com/ardanlabs/jinja (v1.8.0, the newest that
// builds with Go 1.26), a pure-Go Jinja engine written for chat templates,
// with Hugging Face's trim_blocks and lstrip_blocks settings. A Template is
// safe for concurrent use.
//
// # Peer
//
// The reference is @huggingface/jinja, the Jinja engine that
// transformers.js's apply_chat_template runs: it is Hugging Face's own, it
// runs here (npm) where Python's transformers is not installed, and it
// renders exactly what a JavaScript client of the same model gets.
// e2e/chat/render.mjs renders a table of conversations with real
// templates (Qwen3, Qwen2.5, Llama 3 and 3.1, Mistral 7B v0.2 and Nemo,
// Phi-3 and 3.5, DeepSeek-R1-Distill) into testdata/chat/expected.json,
// and TestPeerParity must match it byte for byte. Known divergence: |trim
// and .strip() use Go's strings.TrimSpace, which takes U+0085 and not
// U+FEFF at the ends of a string where JavaScript's trim does the opposite
// (Python's str.strip, as Go here, keeps U+FEFF and takes U+0085).
//
// # Limits
//
// The engine has no limits of its own, and a template comes from whoever
// published the model, so Parse writes guards into the template's source
// (instrument.go) that Render backs with per-render state (sandbox.go): a
// range of at most Limits.MaxRange items (100,000, as jinja2's sandbox in
// transformers); a macro entered on a Go stack deeper than MaxFrames stops
// with "recursion too deep" rather than overflowing the stack, a fatal
// error no recover catches; loop iterations plus macro calls, printed
// bytes (with the literal text of loop and macro bodies) and wall time are
// capped; a printed list or dict that contains itself is refused. Each is
// an error wrapping ErrLimit. FuzzInstrument checks that the guards change
// no output. Not bounded: one operation of the engine that allocates a
// huge value it does not print ({% set s = 'x' * 10**10 %}), and filters
// or comparisons that walk a value containing itself (tojson, string, ==),
// which still overflow the stack. Other panics of the engine are
// recovered and returned as errors.
package chat
