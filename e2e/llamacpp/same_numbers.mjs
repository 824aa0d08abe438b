// node e2e/llamacpp/same_numbers.mjs URL DUMP
//
// Ties the black box to the white box: for every case of a `ggml dump`
// DUMP, asks the `ggml serve` shim at URL (same GGUF, same context
// settings) for the next token's top 5 log-probabilities and requires
// them, rounded to float32, to be bit for bit the 5 largest of the dump's
// last_logprobs. Both are log-softmax in float64 of llama.cpp's float32
// logits; one copied by the graph callback, the other read through
// llama_get_logits_ith. A shim answering anything but llama.cpp's numbers
// for the prompt it was sent fails here. Exit 0 when every case agrees.
import { readFileSync } from "node:fs";
import { join } from "node:path";

const [url, dump] = process.argv.slice(2);
const manifest = JSON.parse(readFileSync(join(dump, "manifest.json"), "utf8"));

// readNPY reads a little-endian float32 .npy (the dump writes nothing else).
function readNPY(path) {
  const b = readFileSync(path);
  const headerLen = b.readUInt16LE(8);
  if (!b.toString("latin1", 10, 10 + headerLen).includes("'<f4'")) throw new Error(`${path}: not little-endian float32`);
  const body = b.subarray(10 + headerLen);
  return new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.length));
}

let failed = 0;
for (const c of manifest.cases) {
  const t = manifest.tensors.find((t) => t.case === c.id && t.name === "last_logprobs");
  const want = [...readNPY(join(dump, t.file))].sort((a, b) => b - a).slice(0, 5);
  const resp = await fetch(`${url}/v1/completions`, {
    method: "POST",
    body: JSON.stringify({ prompt: c.tokens, max_tokens: 1, logprobs: 5, temperature: 0 }),
  });
  if (!resp.ok) throw new Error(`case ${c.id}: ${resp.status} ${await resp.text()}`);
  const top = (await resp.json()).choices[0].logprobs.top_logprobs[0];
  const got = Object.values(top).map(Math.fround).sort((a, b) => b - a);
  // Tokens of the same text share one entry; the tiny set's top 5 have none.
  const same = got.length === want.length && got.every((v, i) => v === want[i]);
  console.log(`${c.id}: shim top 5 ${same ? "==" : "!="} dump's last_logprobs top 5 (${got.map((v) => v.toFixed(6)).join(", ")})`);
  if (!same) {
    console.log(`  dump: ${want.map((v) => v.toFixed(6)).join(", ")}`);
    failed++;
  }
}
process.exit(failed ? 1 : 0);
