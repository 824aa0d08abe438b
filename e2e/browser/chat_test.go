//go:build browser

package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/server"
)

// TestChatInChromium drives the page's chat as a user would, on GPT-2
// (the plain template, byte-level BPE) and on a Llama-family model (its
// own Jinja template, which refuses a conversation whose roles do not
// alternate, and SentencePiece tokens with leading spaces): two turns,
// each seen streaming; the second request carries the first turn; the
// reply on the page is the API's; hovering each token, and reaching it
// from the keyboard (Tab, then the arrow keys), shows the log-probability
// and alternatives the API returned for it, and names it for screen
// readers. Then a new chat cut by a stop sequence, and a turn the server
// refuses.
func TestChatInChromium(t *testing.T) {
	browser := launch(t, chromium(t))
	for _, name := range []string{"tiny-gpt2", "tiny-llama"} {
		t.Run(name, func(t *testing.T) {
			ts, exchanges := chatServer(t, name)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			session, err := browser.open(ctx, ts.URL+"/?max_tokens=12&temperature=0")
			require.NoError(t, err)
			d := &chatDriver{ctx: ctx, c: browser, session: session, exchanges: exchanges}

			// The page says how the conversation is rendered, in /v1/models' words.
			var info struct {
				Data []struct{ Description string }
			}
			getJSON(t, ts.URL+"/v1/models", &info)
			desc := pollIn(ctx, t, browser, session, `JSON.stringify(document.getElementById("chat_template").textContent)`,
				func(s string) bool { return strings.HasPrefix(s, info.Data[0].Description) })
			t.Logf("%s: %s", name, desc)

			first, firstTokens := d.twoTurns(t, "Hello", "Tell me more")
			shown := d.stopSequence(t, "Hello", first, firstTokens)
			d.refusedTurn(t, "Tell me more", shown)
			d.stopButton(t, "Hello", "Go on")
		})
	}
}

// chatDriver is a page open in the browser and the chat requests it sent.
type chatDriver struct {
	ctx       context.Context
	c         *cdp
	session   string
	exchanges *recorded
}

// eval evaluates js in the page into v.
func (d *chatDriver) eval(t *testing.T, js string, v any) {
	t.Helper()
	require.NoError(t, d.c.eval(d.ctx, d.session, js, v))
}

// run evaluates js, which must end in an expression (true will do).
func (d *chatDriver) run(t *testing.T, js string) {
	t.Helper()
	var ignored any
	d.eval(t, js, &ignored)
}

// twoTurns holds a two-turn conversation and returns the first reply and
// its tokens as the API sent them.
func (d *chatDriver) twoTurns(t *testing.T, turns ...string) (string, []apiToken) {
	t.Helper()
	var replies []string
	var firstTokens []apiToken
	for i, text := range turns {
		st := d.send(t, text)
		require.Equal(t, "done", st.State, "status: %s", st.Status)
		all := d.exchanges.all()
		require.Len(t, all, i+1, "one request a turn")
		ex := all[i]
		want := []chatMessage{}
		for j, r := range replies {
			want = append(want, chatMessage{"user", turns[j]}, chatMessage{"assistant", r})
		}
		want = append(want, chatMessage{"user", text})
		require.Equal(t, want, ex.request.Messages, "turn %d sends the conversation so far", i+1)
		require.True(t, ex.request.Stream)
		require.True(t, ex.request.Logprobs)
		require.Positive(t, ex.request.TopLogprobs)

		content, tokens := ex.answer(t)
		require.NotEmpty(t, tokens, "logprobs are asked for and returned")
		require.Equal(t, append(want, chatMessage{"assistant", content}), st.Messages,
			"the page shows the conversation, the reply as the API sent it")
		require.NotEmpty(t, st.Partial, "never saw a partial reply: buffered, not streamed")
		require.True(t, strings.HasPrefix(content, st.Partial) && len(st.Partial) < len(content),
			"partial %q of %q", st.Partial, content)
		d.checkHover(t, i, tokens)
		d.checkKeyboard(t, i, tokens)
		replies = append(replies, content)
		if i == 0 {
			firstTokens = tokens
		}
		t.Logf("turn %d: %q, %d tokens, seen partially as %q", i+1, content, len(tokens), st.Partial)
	}
	return replies[0], firstTokens
}

// stopSequence starts a new chat with a stop sequence spanning the second
// and third tokens of reply, text's greedy reply: the same reply stops
// inside its second token, the page shows the text the API sent, and its
// tokens are those the API listed, which end with the text (the one the
// cut splits as its part of it, none past it). It returns the messages
// shown.
func (d *chatDriver) stopSequence(t *testing.T, text, reply string, tokens []apiToken) []chatMessage {
	t.Helper()
	require.Greater(t, len(tokens), 3)
	stop := strings.TrimLeft(tokens[1].Token, " ") + tokens[2].Token
	require.NotContains(t, stop, ",", "the page splits stop sequences at commas")
	d.run(t, fmt.Sprintf(`document.getElementById("stop").value = %q; document.getElementById("chat_new").click(); true`, stop))
	st := d.send(t, text)
	require.Equal(t, "done", st.State, "status: %s", st.Status)
	all := d.exchanges.all()
	ex := all[len(all)-1]
	require.Equal(t, []chatMessage{{"user", text}}, ex.request.Messages, "a new chat starts afresh")
	content, got := ex.answer(t)
	require.True(t, strings.HasPrefix(reply, content) && len(content) < len(reply), "%q stopped at %q", reply, stop)
	require.Equal(t, []chatMessage{{"user", text}, {"assistant", content}}, st.Messages)
	d.checkHover(t, 0, got)
	d.checkKeyboard(t, 0, got)
	var spelled string
	d.eval(t, `[...document.querySelectorAll("#chat_log .msg.assistant .tok")].map((s) => s.textContent).join("")`, &spelled)
	require.Equal(t, content, spelled, "the token spans spell the reply, nothing past the stop")
	require.Less(t, len(got), len(tokens), "the tokens past the stop are not listed")
	t.Logf("stopped at %q: %q, %d tokens", stop, content, len(got))
	return st.Messages
}

// refusedTurn sends text with more max_tokens than the context holds:
// the turn leaves the conversation as shown and its text in the box,
// with the server's reason shown.
func (d *chatDriver) refusedTurn(t *testing.T, text string, shown []chatMessage) {
	t.Helper()
	d.run(t, `document.getElementById("max_tokens").value = "100000"; true`)
	st := d.send(t, text)
	require.Equal(t, "error", st.State)
	require.Contains(t, st.Status, "exceeds the context length")
	require.Equal(t, shown, st.Messages)
	var input string
	d.eval(t, `document.getElementById("chat_input").value`, &input)
	require.Equal(t, text, input)
}

// stopButton stops a reply to text while it streams (40 tokens at 30 ms
// leave the click a second): what was shown is the assistant's turn, and
// the next request, next, carries it.
func (d *chatDriver) stopButton(t *testing.T, text, next string) {
	t.Helper()
	d.run(t, `document.getElementById("max_tokens").value = "40"; document.getElementById("stop").value = "";
		document.getElementById("chat_new").click(); true`)
	d.submit(t, text)
	pollIn(d.ctx, t, d.c, d.session, chatStateJS, func(s chatState) bool {
		return s.State == "running" && len(s.Messages) == 2 && s.Messages[1].Content != ""
	})
	d.run(t, `document.getElementById("chat_stop").click(); true`)
	st := pollIn(d.ctx, t, d.c, d.session, chatStateJS, func(s chatState) bool { return s.State != "running" })
	require.Equal(t, "done", st.State, "status: %s", st.Status)
	var class string
	d.eval(t, `document.querySelectorAll("#chat_log .msg")[1].className`, &class)
	require.Equal(t, "msg assistant stopped", class, "the reply ran to its end before Stop")
	said := st.Messages[1].Content
	require.NotEmpty(t, said)

	require.Equal(t, "done", d.send(t, next).State)
	all := d.exchanges.all()
	require.Equal(t, []chatMessage{{"user", text}, {"assistant", said}, {"user", next}}, all[len(all)-1].request.Messages,
		"the next turn carries what was said before Stop")
	t.Logf("stopped by the button after %q", said)
}

// chatServer serves the named tiny model with its own chat template (the
// plain one if it has none), a per-token delay so that a reply is seen
// growing, and a recorder of the chat requests the page sends.
func chatServer(t *testing.T, name string) (*httptest.Server, *recorded) {
	t.Helper()
	m, tok := tiny.Family(t, name)
	own, err := server.ModelChatTemplate(m)
	require.NoError(t, err)
	srv := server.New(server.Config{TokenDelay: 30 * time.Millisecond})
	require.NoError(t, srv.SetModelChat(m, tok, own))
	rec := &recorded{next: srv.Handler()}
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	return ts, rec
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatState is what the test reads of the chat view: every message as
// shown, the state on <body>, and the reply seen while it streamed.
type chatState struct {
	State    string        `json:"state"`
	Status   string        `json:"status"`
	Messages []chatMessage `json:"messages"`
	Partial  string        `json:"-"`
}

const chatStateJS = `JSON.stringify({state: document.body.dataset.chat || "",
  status: document.getElementById("chat_status").textContent,
  messages: [...document.querySelectorAll("#chat_log .msg")].map((m) => ({
    role: m.querySelector(".role").textContent, content: m.querySelector(".text").textContent}))})`

// submit types text in the message box and presses Send.
func (d *chatDriver) submit(t *testing.T, text string) {
	t.Helper()
	d.run(t, fmt.Sprintf(`document.getElementById("chat_input").value = %q; document.getElementById("send").click(); true`, text))
}

// send types text, sends it, and waits for the reply to finish,
// noting a partial reply seen on the way.
func (d *chatDriver) send(t *testing.T, text string) chatState {
	t.Helper()
	d.submit(t, text)
	var partial string
	st := pollIn(d.ctx, t, d.c, d.session, chatStateJS, func(s chatState) bool {
		if n := len(s.Messages); s.State == "running" && n > 0 && s.Messages[n-1].Role == "assistant" &&
			s.Messages[n-1].Content != "" && partial == "" {
			partial = s.Messages[n-1].Content
		}
		return s.State == "done" || s.State == "error"
	})
	st.Partial = partial
	return st
}

// tipEntry is one token as the tooltip shows it: the unrounded numbers
// from its data attributes, the log-probability as printed.
type tipEntry struct {
	Token   string `json:"token"`
	Logprob string `json:"logprob"`
	Shown   string `json:"shown"`
	Alts    []struct {
		Token   string `json:"token"`
		Logprob string `json:"logprob"`
	} `json:"alts"`
}

// checkHover points at each token of reply i in turn and checks that the
// tooltip shows the API's tokens, in order, with their log-probabilities
// (printed to 4 places) and alternatives; then that it goes when the
// pointer leaves.
func (d *chatDriver) checkHover(t *testing.T, reply int, want []apiToken) {
	t.Helper()
	var n int
	spans := fmt.Sprintf(`document.querySelectorAll("#chat_log .msg.assistant")[%d].querySelectorAll(".tok")`, reply)
	d.eval(t, spans+".length", &n)
	var got []tipEntry
	for k := range n {
		var box struct{ X, Y float64 }
		d.eval(t, fmt.Sprintf(`(() => { const s = %s[%d]; s.scrollIntoView({block: "center"});
			const r = s.getClientRects()[0]; return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()`, spans, k), &box)
		require.NoError(t, d.c.hover(d.ctx, d.session, box.X, box.Y))
		var entries []tipEntry
		d.eval(t, `(() => { const tip = document.getElementById("tip");
			return tip.hidden ? null : [...tip.querySelectorAll(".tip-token")].map((e) => ({token: e.dataset.token,
				logprob: e.dataset.logprob, shown: e.querySelector(".tip-lp").textContent,
				alts: [...e.querySelectorAll("tr")].map((r) => ({token: r.dataset.token, logprob: r.dataset.logprob}))})); })()`, &entries)
		require.NotEmpty(t, entries, "hovering token span %d of reply %d shows no tooltip", k, reply+1)
		got = append(got, entries...)
	}
	compareTips(t, got, want)
	var hidden bool
	require.NoError(t, d.c.hover(d.ctx, d.session, 1, 1))
	d.eval(t, `document.getElementById("tip").hidden`, &hidden)
	require.True(t, hidden, "the tooltip stays after the pointer left the tokens")
}

// compareTips: the tooltips shown, in order, are the API's tokens with
// their log-probabilities (unrounded, and printed to 4 places) and
// alternatives.
func compareTips(t *testing.T, got []tipEntry, want []apiToken) {
	t.Helper()
	require.Len(t, got, len(want), "the tooltips cover every token the API returned")
	for k, w := range want {
		g := got[k]
		require.Equal(t, w.Token, g.Token, "token %d", k)
		require.Equal(t, w.Logprob, parseFloat(t, g.Logprob), "token %d %q: the page's log-probability is the API's", k, w.Token)
		shown := parseFloat(t, strings.TrimPrefix(g.Shown, ", logprob "))
		require.LessOrEqual(t, math.Abs(shown-w.Logprob), 0.5e-4, "token %d: %q printed for %v", k, g.Shown, w.Logprob)
		require.Len(t, g.Alts, len(w.Top), "token %d's alternatives", k)
		for a, alt := range w.Top {
			require.Equal(t, alt.Token, g.Alts[a].Token, "token %d alternative %d", k, a)
			require.Equal(t, alt.Logprob, parseFloat(t, g.Alts[a].Logprob), "token %d alternative %d", k, a)
		}
	}
}

// checkKeyboard reaches reply i's tokens from the keyboard: Tab from the
// field before the conversation (one tab stop a reply) focuses its first
// token and shows its details as hovering does, the right arrow walks the
// tokens to the end (the tooltips again the API's tokens, in order), End
// and Home jump, Escape hides the details, and each token is a named
// button (its text and probability) described by the tooltip while it
// shows. Tab then leaves the reply, and the tooltip goes.
func (d *chatDriver) checkKeyboard(t *testing.T, reply int, want []apiToken) {
	t.Helper()
	press := func(key string) { require.NoError(t, d.c.press(d.ctx, d.session, key)) }
	type focused struct {
		Reply, Index, Count int
		Role, Label, Desc   string
		Tip                 []tipEntry
	}
	const focusJS = `(() => { const s = document.activeElement;
		const replies = [...document.querySelectorAll("#chat_log .msg.assistant")];
		const r = replies.findIndex((m) => m.contains(s));
		const toks = r < 0 ? [] : [...replies[r].querySelectorAll(".tok")];
		const tip = document.getElementById("tip");
		return {reply: r, index: toks.indexOf(s), count: toks.length, role: s.getAttribute("role") || "",
			label: s.getAttribute("aria-label") || "", desc: s.getAttribute("aria-describedby") || "",
			tip: tip.hidden ? null : [...tip.querySelectorAll(".tip-token")].map((e) => ({token: e.dataset.token,
				logprob: e.dataset.logprob, shown: e.querySelector(".tip-lp").textContent,
				alts: [...e.querySelectorAll("tr")].map((r) => ({token: r.dataset.token, logprob: r.dataset.logprob}))}))}; })()`
	at := func() focused {
		var f focused
		d.eval(t, focusJS, &f)
		return f
	}
	d.run(t, `document.getElementById("chat_system").focus(); true`)
	for range reply + 1 {
		press("Tab")
	}
	f := at()
	require.Equal(t, reply, f.Reply, "Tab %d times from the system prompt reaches reply %d", reply+1, reply+1)
	require.Equal(t, 0, f.Index, "a reply's tab stop is its first token")
	var got []tipEntry
	for k := range f.Count {
		if k > 0 {
			press("ArrowRight")
			f = at()
		}
		require.Equal(t, k, f.Index, "the right arrow moves to the next token")
		require.Equal(t, "button", f.Role)
		require.NotEmpty(t, f.Tip, "focusing token span %d of reply %d shows no tooltip", k, reply+1)
		require.Equal(t, "tip", f.Desc, "the tooltip describes the focused token")
		require.Contains(t, f.Label, "probability ", "token span %d's accessible name", k)
		for _, e := range f.Tip {
			lp, err := strconv.ParseFloat(e.Logprob, 64)
			require.NoError(t, err)
			require.Contains(t, f.Label, fmtProb(lp), "the name holds the probability the tooltip shows")
		}
		got = append(got, f.Tip...)
	}
	compareTips(t, got, want)
	press("ArrowRight")
	require.Equal(t, f.Count-1, at().Index, "the right arrow stops at the last token")
	press("Home")
	require.Equal(t, 0, at().Index)
	press("End")
	require.Equal(t, f.Count-1, at().Index)
	press("Escape")
	require.Empty(t, at().Tip, "Escape hides the details")
	require.Empty(t, at().Desc)
	last := f.Count - 1
	press("Tab")
	f = at()
	require.NotEqual(t, reply, f.Reply, "Tab leaves the reply's tokens: one tab stop a reply")
	require.Empty(t, f.Tip)
	// Back into the reply, its tab stop is where the focus left it.
	d.run(t, `document.getElementById("chat_system").focus(); true`)
	for range reply + 1 {
		press("Tab")
	}
	f = at()
	require.Equal(t, [2]int{reply, last}, [2]int{f.Reply, f.Index}, "the tab stop moved with the arrows")
	press("Home") // leave the first token the tab stop for the next check
	d.run(t, `document.activeElement.blur(); true`)
}

// fmtProb is the page's probability as it prints it (chat.js's fmtProb).
func fmtProb(logprob float64) string {
	p := math.Exp(logprob)
	if p >= 0.001 {
		return strconv.FormatFloat(100*p, 'f', 2, 64) + "%"
	}
	s := strconv.FormatFloat(100*p, 'e', 1, 64) // 1.2e-05 where JavaScript writes 1.2e-5
	mant, exp, _ := strings.Cut(s, "e")
	n, _ := strconv.Atoi(exp)
	return mant + "e" + fmt.Sprintf("%+d", n) + "%"
}

func parseFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err, "%q", s)
	return v
}
