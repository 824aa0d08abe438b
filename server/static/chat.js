"use strict";
// The chat view. Each turn sends the whole conversation to
// /v1/chat/completions, which renders it with the model's chat template;
// the reply streams in, each token shaded by its probability, and hovering
// or focusing a token shows its log-probability and the alternatives the
// model weighed. From the keyboard a reply's tokens are one tab stop
// (Tab), then the arrow keys, Home and End move between them and Escape
// hides the details; each token is named for screen readers by its text
// and probability.
// Uses $, headers, errorText, sampling and sseParser of page.js.

const chat = { history: [], controller: null };
const tokenInfo = new WeakMap(); // token span → the logprobs entries it shows

// chatModel says which template renders the conversation (/v1/models
// needs the key when the server has one, so it is asked again when the key
// changes).
async function chatModel() {
  const resp = await fetch("/v1/models", { headers: headers() });
  if (!resp.ok) return;
  const m = (await resp.json()).data[0];
  $("chat_template").textContent = m.description + "; each turn sends the whole conversation so far.";
}

function chatBody() {
  const messages = [];
  const system = $("chat_system").value;
  if (system.trim()) messages.push({ role: "system", content: system });
  messages.push(...chat.history);
  const body = { messages, stream: true, stream_options: { include_usage: true }, ...sampling() };
  if ($("chat_logprobs").checked) {
    body.logprobs = true;
    const top = Number($("top_logprobs").value);
    if (top > 0) body.top_logprobs = top;
  }
  return body;
}

// addMessage appends a message to the log and returns the element its
// text goes in.
function addMessage(role, text) {
  const msg = document.createElement("div");
  msg.className = "msg " + role;
  const label = document.createElement("span");
  label.className = "role";
  label.textContent = role;
  const body = document.createElement("span");
  body.className = "text";
  body.textContent = text;
  msg.append(label, body);
  $("chat_log").append(msg);
  return body;
}

// shade is a token's background: clear when the model was sure of it,
// deeper the less likely it was. Its depth follows the log-probability,
// not the probability, which would paint 20% and 0.1% alike; from about
// 0.7% (logprob -5) down it is the deepest.
function shade(logprob) {
  return "rgba(240, 120, 20, " + (0.6 * Math.min(1, -logprob / 5)).toFixed(3) + ")";
}

// tokenSpan appends a span showing text for the logprobs entries it came
// from, shaded by the least likely of them.
function tokenSpan(el, text, entries, cls) {
  const s = document.createElement("span");
  s.className = cls;
  s.textContent = text;
  s.style.backgroundColor = shade(Math.min(...entries.map((t) => t.logprob)));
  // A reply's first token is its tab stop (a roving tabindex: the arrow
  // keys move it), the rest are reached from there.
  s.tabIndex = el.querySelector(".tok") ? -1 : 0;
  s.setAttribute("role", "button");
  tokenInfo.set(s, entries);
  el.append(s);
  labelToken(s);
}

// labelToken names a token span for assistive technology: its text and
// the probability of each token it shows (the tooltip has the rest, and
// is the span's description while shown).
function labelToken(s) {
  const entries = tokenInfo.get(s);
  const probs = entries.map((e) => fmtProb(e.logprob)).join(", ");
  let what = JSON.stringify(s.textContent);
  if (s.classList.contains("end")) what = "end of text";
  else if (s.classList.contains("stop")) what = "tokens past the stop sequence";
  s.setAttribute("aria-label", what + ", probability " + probs + (entries.length > 1 ? " (" + entries.length + " tokens)" : ""));
}

// tabStop makes sure one token of el is its tab stop.
function tabStop(el) {
  const toks = [...el.querySelectorAll(".tok")];
  if (toks.length && !toks.some((s) => s.tabIndex === 0)) toks[0].tabIndex = 0;
}

// tokenView renders a reply's tokens into el as they stream. A token's
// bytes may hold part of a character, so the text is decoded from the
// bytes and a span covers the tokens its text came from (one, or the few
// that spell a character between them); a token without bytes (the end
// of the text) is a mark of its own.
function tokenView(el) {
  const decoder = new TextDecoder("utf-8");
  let pending = [];
  return {
    add(entry) {
      if (entry.bytes.length === 0) {
        tokenSpan(el, "", [entry], "tok mark end");
        return;
      }
      pending.push(entry);
      const text = decoder.decode(new Uint8Array(entry.bytes), { stream: true });
      if (text !== "") {
        tokenSpan(el, text, pending, "tok");
        pending = [];
      }
    },
    // flush renders what an unfinished character left.
    flush() {
      const text = decoder.decode();
      if (pending.length) tokenSpan(el, text, pending, "tok");
      pending = [];
    },
  };
}

// fitTokens makes the token spans spell content. This server lists only
// the tokens of the returned text (the one a stop sequence cuts as its
// part of it); should tokens run past the text, the span the text ends in
// keeps its part and the tokens wholly past it become one "stop" mark, so
// that every token listed can still be pointed at. Tokens that do not
// spell the text at all give way to the text.
function fitTokens(el, content) {
  if (!el.textContent.startsWith(content)) {
    el.textContent = content;
    return false;
  }
  let left = content.length;
  const cut = [];
  for (const s of [...el.children]) {
    const n = s.textContent.length;
    if (left <= 0 && n > 0) {
      cut.push(...tokenInfo.get(s));
      s.remove();
    } else if (n > left) {
      s.textContent = s.textContent.slice(0, left);
      labelToken(s);
    }
    left -= n;
  }
  if (cut.length) tokenSpan(el, "", cut, "tok mark stop");
  tabStop(el);
  return true;
}

function setChatStatus(text, isError) {
  $("chat_status").textContent = text;
  $("chat_status").classList.toggle("error", isError);
}

function chatRunning(running) {
  $("send").disabled = running;
  $("chat_stop").disabled = !running;
}

async function sendChat() {
  const text = $("chat_input").value;
  if (!text.trim() || chat.controller) return;
  $("chat_input").value = "";
  // This turn's conversation: New chat starts another, and this one's end
  // must not land in it.
  const history = chat.history;
  history.push({ role: "user", content: text });
  const userEl = addMessage("user", text);
  const reply = addMessage("assistant", "");
  const body = chatBody();
  const view = body.logprobs ? tokenView(reply) : null;
  setChatStatus("waiting…", false);
  document.body.dataset.chat = "running";
  chat.controller = new AbortController();
  chatRunning(true);
  let content = "", finish = "", usage = null, t0 = 0;
  try {
    const resp = await fetch("/v1/chat/completions", { method: "POST", headers: headers(),
      body: JSON.stringify(body), signal: chat.controller.signal });
    if (!resp.ok) throw new Error(await errorText(resp));
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let failure = null, done = false;
    const feed = sseParser((_, raw) => {
      if (raw === "[DONE]") { done = true; return; }
      const ev = JSON.parse(raw);
      if (ev.error) { failure = ev.error; return; }
      if (ev.usage) usage = ev.usage;
      for (const ch of ev.choices) {
        if (!t0) t0 = performance.now();
        const piece = ch.delta && ch.delta.content || "";
        content += piece;
        if (view && ch.logprobs) ch.logprobs.content.forEach(view.add);
        else if (!view) reply.append(piece);
        if (ch.finish_reason) finish = ch.finish_reason;
      }
    });
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      feed(value);
    }
    if (failure) throw new Error(failure.code + ": " + failure.message);
    if (!done) throw new Error("the stream ended without [DONE]");
    history.push({ role: "assistant", content });
    const shown = view ? (view.flush(), fitTokens(reply, content)) : true;
    const secs = (performance.now() - t0) / 1000;
    const n = usage ? usage.completion_tokens : 0;
    setChatStatus(n + " tokens, " + (n / Math.max(secs, 1e-3)).toFixed(0) + " tokens/s, prompt " +
      (usage ? usage.prompt_tokens : "?") + " tokens, finish: " + finish +
      (shown ? "" : " (the tokens do not spell the reply: shown as text)"), false);
    document.body.dataset.chat = "done";
  } catch (err) {
    const stopped = err.name === "AbortError";
    if (stopped && content !== "") {
      // What the model said before Stop is its turn.
      history.push({ role: "assistant", content });
      if (view) { view.flush(); fitTokens(reply, content); }
      reply.parentElement.classList.add("stopped");
      setChatStatus("stopped", false);
      document.body.dataset.chat = "done";
    } else {
      // The turn did not happen: it leaves the conversation, its text
      // goes back in the box to send again.
      history.pop();
      userEl.parentElement.remove();
      reply.parentElement.remove();
      if (history === chat.history) $("chat_input").value = text;
      setChatStatus(stopped ? "stopped before the reply began" : String(err.message || err), !stopped);
      document.body.dataset.chat = stopped ? "done" : "error";
    }
  } finally {
    chat.controller = null;
    chatRunning(false);
  }
}

function newChat() {
  if (chat.controller) chat.controller.abort();
  chat.history = [];
  $("chat_log").textContent = "";
  setChatStatus("", false);
  hideTip();
}

// The tooltip: for each token of the hovered span, its probability and
// log-probability, then the alternatives (top_logprobs) with the chosen
// one in bold. Numbers are also in data attributes, unrounded.
function fmtProb(logprob) {
  const p = Math.exp(logprob);
  return p >= 0.001 ? (100 * p).toFixed(2) + "%" : (100 * p).toExponential(1) + "%";
}

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

function tipToken(entry) {
  const box = document.createElement("div");
  box.className = "tip-token";
  box.dataset.token = entry.token;
  box.dataset.logprob = String(entry.logprob);
  const head = document.createElement("div");
  const code = document.createElement("code");
  code.textContent = JSON.stringify(entry.token);
  const p = document.createElement("span");
  p.className = "tip-p";
  p.textContent = " p " + fmtProb(entry.logprob);
  const lp = document.createElement("span");
  lp.className = "tip-lp";
  lp.textContent = ", logprob " + entry.logprob.toFixed(4);
  head.append(code, p, lp);
  box.append(head);
  const alts = entry.top_logprobs || [];
  if (alts.length) {
    const table = document.createElement("table");
    for (const a of alts) {
      const tr = document.createElement("tr");
      tr.dataset.token = a.token;
      tr.dataset.logprob = String(a.logprob);
      if (a.token === entry.token && a.logprob === entry.logprob) tr.className = "chosen";
      const bar = document.createElement("span");
      bar.className = "bar";
      bar.style.width = (4 * Math.exp(a.logprob)).toFixed(2) + "rem";
      const barCell = cell("");
      barCell.append(bar);
      tr.append(cell(JSON.stringify(a.token)), cell(fmtProb(a.logprob), "num"), cell(a.logprob.toFixed(4), "num"), barCell);
      table.append(tr);
    }
    box.append(table);
  }
  return box;
}

let tipFor = null;

function showTip(span) {
  if (tipFor === span) return;
  hideTip();
  tipFor = span;
  span.classList.add("active");
  span.setAttribute("aria-describedby", "tip");
  const tip = $("tip");
  tip.replaceChildren(...tokenInfo.get(span).map(tipToken));
  tip.hidden = false;
  const r = span.getBoundingClientRect(), t = tip.getBoundingClientRect();
  const below = r.bottom + 4 + t.height <= window.innerHeight;
  tip.style.top = (below ? r.bottom + 4 : Math.max(0, r.top - 4 - t.height)) + "px";
  tip.style.left = Math.max(0, Math.min(r.left, window.innerWidth - t.width - 4)) + "px";
}

function hideTip() {
  if (tipFor) {
    tipFor.classList.remove("active");
    tipFor.removeAttribute("aria-describedby");
  }
  tipFor = null;
  $("tip").hidden = true;
}

// The keyboard: focus shows a token's details as hovering does; within a
// reply the arrow keys, Home and End move the focus (and the reply's tab
// stop with it), Escape hides the details, Enter or Space shows them
// again.
function tokenOf(target) {
  const span = target.closest && target.closest(".tok");
  return span && tokenInfo.has(span) ? span : null;
}

function focusToken(from, to) {
  if (!to || to === from) return;
  from.tabIndex = -1;
  to.tabIndex = 0;
  to.focus();
}

$("chat_log").addEventListener("focusin", (ev) => {
  const span = tokenOf(ev.target);
  if (span) showTip(span);
});
$("chat_log").addEventListener("focusout", (ev) => {
  if (tipFor && tipFor === ev.target) hideTip();
});
$("chat_log").addEventListener("keydown", (ev) => {
  const span = tokenOf(ev.target);
  if (!span) return;
  const toks = [...span.parentElement.querySelectorAll(".tok")];
  const i = toks.indexOf(span);
  const to = { ArrowRight: toks[i + 1], ArrowDown: toks[i + 1], ArrowLeft: toks[i - 1], ArrowUp: toks[i - 1],
    Home: toks[0], End: toks[toks.length - 1] }[ev.key];
  if (to !== undefined) {
    ev.preventDefault();
    focusToken(span, to);
  } else if (ev.key === "Escape") {
    hideTip();
  } else if (ev.key === "Enter" || ev.key === " ") {
    ev.preventDefault();
    showTip(span);
  }
});

$("chat_log").addEventListener("mouseover", (ev) => {
  const span = ev.target.closest && ev.target.closest(".tok");
  if (span && tokenInfo.has(span)) showTip(span);
  else hideTip();
});
$("chat_log").addEventListener("mouseleave", hideTip);
$("send").addEventListener("click", sendChat);
$("chat_stop").addEventListener("click", () => chat.controller && chat.controller.abort());
$("chat_new").addEventListener("click", newChat);
$("chat_input").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    sendChat();
  }
});
$("apikey").addEventListener("change", () => chatModel().catch(() => {}));
chatModel().catch(() => {});
