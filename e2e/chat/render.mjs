// Renders the chat package's parity table with @huggingface/jinja, the
// Jinja engine behind transformers.js's apply_chat_template, and writes
// testdata/chat/expected.json. The Go test (chat/chat_test.go) reads the
// templates and conversations from that file, renders them with package
// chat and must give the same bytes, or the same raised message.
//
//   npm ci --prefix e2e/chat && node e2e/chat/render.mjs
//
// Each template is rendered as transformers.js's
// PreTrainedTokenizer.apply_chat_template does: new Template(src).render({
// messages, add_generation_prompt, tools: null, documents: null,
// bos_token, eos_token }), where a special token is passed only when the
// tokenizer has one (Qwen has no BOS). The other special tokens (unk, pad,
// ...) are left out: package chat passes only BOS and EOS, and none of
// these templates reads the others.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Template } from "@huggingface/jinja";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const peer = JSON.parse(readFileSync(join(here, "node_modules", "@huggingface", "jinja", "package.json"), "utf8"));

// Where each template comes from (paths from the repository root). A
// tokenizer_config entry takes template, BOS and EOS from that file, as
// chat.FromTokenizerConfig does; a file entry is a template copied into
// testdata/chat (see its SOURCE.md) with the model's BOS and EOS given here;
// gguf names the file the copy was taken from, which the Go test also
// loads with chat.FromGGUF.
const templates = [
  { name: "qwen3", tokenizer_config: "testdata/tokenizer/qwen2/tokenizer_config.json" },
  { name: "llama3", tokenizer_config: "testdata/tokenizer/llama-bpe/tokenizer_config.json" },
  { name: "phi-3-mini", file: "testdata/chat/phi-3-mini.jinja", gguf: "testdata/tokenizer/phi-3/ggml-vocab-phi-3.gguf", bos_token: "<s>", eos_token: "<|endoftext|>" },
  { name: "mistral-7b-instruct-v0.2", file: "testdata/chat/mistral-7b-instruct-v0.2.jinja", bos_token: "<s>", eos_token: "</s>" },
  { name: "mistral-nemo-instruct-2407", file: "testdata/chat/mistral-nemo-instruct-2407.jinja", bos_token: "<s>", eos_token: "</s>" },
  { name: "qwen2.5-7b-instruct", file: "testdata/chat/qwen2.5-7b-instruct.jinja", eos_token: "<|im_end|>" },
  { name: "llama-3.1-8b-instruct", file: "testdata/chat/llama-3.1-8b-instruct.jinja", bos_token: "<|begin_of_text|>", eos_token: "<|eot_id|>" },
  { name: "phi-3.5-mini-instruct", file: "testdata/chat/phi-3.5-mini-instruct.jinja", bos_token: "<s>", eos_token: "<|endoftext|>" },
  { name: "gemma-3", file: "testdata/chat/gemma-3.jinja", bos_token: "<bos>", eos_token: "<end_of_turn>" },
  { name: "deepseek-r1-distill-qwen-32b", file: "testdata/chat/deepseek-r1-distill-qwen-32b.jinja", bos_token: "<｜begin▁of▁sentence｜>", eos_token: "<｜end▁of▁sentence｜>" },
];

const sys = (content) => ({ role: "system", content });
const user = (content) => ({ role: "user", content });
const asst = (content) => ({ role: "assistant", content });

const conversations = [
  { name: "system-user", add_generation_prompt: true, messages: [sys("You are a helpful assistant."), user("Hello!")] },
  { name: "user-only", add_generation_prompt: true, messages: [user("What is 2+2?")] },
  {
    name: "multi-turn",
    add_generation_prompt: true,
    messages: [user("Hi"), asst("Hello! How can I help?"), user("Tell me a joke.")],
  },
  {
    name: "no-generation-prompt",
    add_generation_prompt: false,
    messages: [sys("Be brief."), user("Name a colour."), asst("Blue.")],
  },
  {
    name: "whitespace-unicode",
    add_generation_prompt: true,
    messages: [
      sys("  Answer in French.\n"),
      user("\n  héllo wörld — 你好 🌍\t \n"),
      asst("  Bonjour ! {{ not_a_variable }} {% if %} 'quotes' \"double\"  \n\n"),
      user("\tmerci\r\n"),
    ],
  },
  {
    // Unicode whitespace at the edges of what templates trim (Llama 3's
    // |trim): JS's trim, Python's str.strip and Go's strings.TrimSpace all
    // take these, and none takes U+200B or U+001C.
    name: "exotic-whitespace",
    add_generation_prompt: true,
    messages: [
      sys("\u00a0\u3000 sys \u2028"),
      user("\u200b user \u001c"),
      asst("\u2003\n reply \u00a0"),
      user("\v\f last \u2029\u1680"),
    ],
  },
  {
    // Where they differ: JS's trim takes U+FEFF and not U+0085. Package
    // chat (like Python) does the opposite: a known divergence, listed in
    // chat_test.go.
    name: "trim-bom-nel",
    add_generation_prompt: true,
    messages: [user("\ufeff hi \u0085")],
  },
  {
    name: "think",
    add_generation_prompt: true,
    messages: [user("2+2?"), asst("<think>\nAdd them.\n</think>\n\n4"), user("And 3+3?")],
  },
  { name: "empty-system", add_generation_prompt: true, messages: [sys(""), user("Hi")] },
  { name: "bad-alternation", add_generation_prompt: true, messages: [user("One"), user("Two")] },
];

function specialToken(cfg, key, file) {
  const v = cfg[key];
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v === "string") return v;
  if (typeof v === "object" && typeof v.content === "string") return v.content;
  throw new Error(`${file}: ${key}: want a string or {"content": ...}`);
}

function load(t) {
  if (t.tokenizer_config) {
    const cfg = JSON.parse(readFileSync(join(root, t.tokenizer_config), "utf8"));
    let src = cfg.chat_template;
    if (Array.isArray(src)) src = src.find((e) => e.name === "default")?.template;
    if (typeof src !== "string") throw new Error(`${t.tokenizer_config}: no chat_template`);
    return { src, bos_token: specialToken(cfg, "bos_token", t.tokenizer_config), eos_token: specialToken(cfg, "eos_token", t.tokenizer_config) };
  }
  return { src: readFileSync(join(root, t.file), "utf8"), bos_token: t.bos_token, eos_token: t.eos_token };
}

const results = [];
for (const t of templates) {
  const { src, bos_token, eos_token } = load(t);
  t.bos_token = bos_token ?? "";
  t.eos_token = eos_token ?? "";
  const tpl = new Template(src);
  for (const c of conversations) {
    const vars = { messages: structuredClone(c.messages), add_generation_prompt: c.add_generation_prompt, tools: null, documents: null };
    if (bos_token) vars.bos_token = bos_token;
    if (eos_token) vars.eos_token = eos_token;
    const r = { template: t.name, conversation: c.name };
    try {
      r.output = tpl.render(vars);
    } catch (e) {
      // raise_exception throws a plain Error with the template's message
      // (the engine refuses to let it be redefined), so a raise is told
      // from an engine error by its message being a literal of the
      // template; anything else stops the script.
      if (!src.includes(e.message)) throw new Error(`${t.name} / ${c.name}: ${e.message}`);
      r.raised = e.message;
    }
    results.push(r);
  }
}

const out = { peer: `${peer.name} ${peer.version}`, templates, conversations, results };
writeFileSync(join(root, "testdata", "chat", "expected.json"), JSON.stringify(out, null, 2) + "\n");
console.log(`wrote testdata/chat/expected.json: ${results.length} renderings (${results.filter((r) => r.raised).length} raised) with ${out.peer}`);
