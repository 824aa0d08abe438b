"use strict";
const $ = (id) => document.getElementById(id);
const NUMBERS = ["max_tokens", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "seed"];
let currentJob = null;

$("apikey").value = localStorage.getItem("llorch_api_key") || "";
$("apikey").addEventListener("change", () => localStorage.setItem("llorch_api_key", $("apikey").value));

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = $("apikey").value.trim();
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

// Errors of the API come as {"errors":[{field,message}]} or {"error":{message}}.
async function errorText(resp) {
  try {
    const body = await resp.json();
    if (body.errors) return body.errors.map((e) => e.field + ": " + e.message).join("; ");
    if (body.error) return body.error.message;
  } catch (_) { /* not JSON */ }
  return resp.status + " " + resp.statusText;
}

// sampling is the Sampling fields as request fields, blank ones left out:
// the same names on /execute and /v1/chat/completions.
function sampling() {
  const body = {};
  for (const name of NUMBERS) {
    const v = $(name).value.trim();
    if (v !== "") body[name] = Number(v);
  }
  const stop = $("stop").value.split(",").filter((s) => s !== "");
  if (stop.length) body.stop = stop;
  return body;
}

function request() {
  const id = "page-" + Date.now().toString(36) + Math.random().toString(36).slice(2, 8);
  return { job_id: id, prompt: $("prompt").value, ...sampling() };
}

// parseSSE feeds text chunks and calls onEvent(name, data) for each event,
// following the EventSource rules (blank line dispatches, data lines join).
function sseParser(onEvent) {
  let buf = "", name = "", data = [];
  return (chunk) => {
    buf += chunk;
    let nl;
    while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        if (data.length) onEvent(name || "message", data.join("\n"));
        name = ""; data = [];
      } else if (!line.startsWith(":")) {
        const i = line.indexOf(":");
        const field = i < 0 ? line : line.slice(0, i);
        let value = i < 0 ? "" : line.slice(i + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "event") name = value;
        else if (field === "data") data.push(value);
      }
    }
  };
}

async function generate() {
  const out = $("output"), status = $("status");
  const body = request();
  out.textContent = "";
  const promptSpan = document.createElement("span");
  promptSpan.className = "prompt";
  promptSpan.textContent = body.prompt;
  const gen = document.createElement("span");
  gen.id = "generated";
  out.append(promptSpan, gen);
  status.textContent = "waiting…";
  status.classList.remove("error");
  document.body.dataset.state = "running";
  document.body.dataset.tokens = "0";
  document.body.dataset.chunks = "0";
  $("run").disabled = true;
  $("cancel").disabled = false;
  currentJob = body.job_id;
  let tokens = 0, t0 = 0, chunks = 0, terminal = null;
  try {
    const resp = await fetch("/execute", { method: "POST", headers: headers(), body: JSON.stringify(body) });
    if (!resp.ok) throw new Error(await errorText(resp));
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    const feed = sseParser((name, raw) => {
      const ev = JSON.parse(raw);
      if (name === "started") {
        t0 = performance.now();
        status.textContent = "seed " + ev.seed + ", " + ev.prompt_tokens + " prompt tokens…";
      } else if (name === "token") {
        tokens++;
        gen.textContent += ev.t;
        document.body.dataset.tokens = String(tokens);
      } else if (name === "end" || name === "error") {
        terminal = ev;
      }
    });
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      chunks++;
      document.body.dataset.chunks = String(chunks);
      feed(value);
    }
    if (!terminal) throw new Error("the stream ended without an end event");
    if (terminal.type === "error") throw new Error(terminal.code + ": " + terminal.message);
    const secs = (performance.now() - t0) / 1000;
    status.textContent = tokens + " tokens, " + (tokens / Math.max(secs, 1e-3)).toFixed(0) + " tokens/s, stop: " +
      terminal.stop_reason + (terminal.stop_sequence_matched ? " (" + JSON.stringify(terminal.stop_sequence_matched) + ")" : "");
    document.body.dataset.state = "done";
  } catch (err) {
    status.textContent = String(err.message || err);
    status.classList.add("error");
    document.body.dataset.state = "error";
  } finally {
    $("run").disabled = false;
    $("cancel").disabled = true;
    currentJob = null;
  }
}

async function cancel() {
  if (!currentJob) return;
  await fetch("/cancel", { method: "POST", headers: headers(), body: JSON.stringify({ job_id: currentJob }) });
}

async function score() {
  const res = $("ll_result");
  res.textContent = "…";
  res.classList.remove("error");
  try {
    const resp = await fetch("/loglikelihood", { method: "POST", headers: headers(),
      body: JSON.stringify({ prompts: [$("ll_context").value], continuations: [$("ll_cont").value] }) });
    if (!resp.ok) throw new Error(await errorText(resp));
    const body = await resp.json();
    res.textContent = "log-likelihood " + body.ll[0].toFixed(4) + (body.is_greedy[0] ? " (greedy)" : " (not greedy)");
    document.body.dataset.ll = String(body.ll[0]);
  } catch (err) {
    res.textContent = String(err.message || err);
    res.classList.add("error");
  }
}

async function showModel() {
  const resp = await fetch("/health");
  const h = await resp.json();
  $("model").textContent = h.model_loaded
    ? "Model: " + h.model + " (vocabulary " + h.vocab_size + ", context " + h.context_length + " tokens), validation " + h.validation.status
    : "Model: " + h.status;
  // No request may ask for more tokens than the context holds; the
  // field's bound is the served model's, not a guess that fits none.
  if (h.context_length) $("max_tokens").max = String(h.context_length);
}

$("run").addEventListener("click", generate);
$("cancel").addEventListener("click", cancel);
$("score").addEventListener("click", score);
showModel().catch(() => {});

// ?prompt=…&max_tokens=…&temperature=…&autorun=1 fills the form and runs
// it (autoscore=1 runs the scorer): links to a ready example, and what the
// headless browser test drives.
const params = new URLSearchParams(location.search);
for (const [k, v] of params) {
  if ($(k) && k !== "apikey") $(k).value = v;
}
if (params.get("autorun") === "1") generate();
if (params.get("autoscore") === "1") score();
