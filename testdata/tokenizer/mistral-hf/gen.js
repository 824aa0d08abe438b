// Writes, for each input of a llama.cpp .inp file, the ids @lenml/tokenizers
// (a fork of transformers.js) gives with a model's tokenizer.json and
// tokenizer_config.json, without special tokens: one line per input.
// usage: node gen.js tokenizer.json tokenizer_config.json vectors.inp > vectors.out
const fs = require("fs");
const { TokenizerLoader } = require("@lenml/tokenizers");
const [tjPath, cfgPath, inpPath] = process.argv.slice(2);
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(tjPath, "utf8")),
  tokenizerConfig: JSON.parse(fs.readFileSync(cfgPath, "utf8")),
});
const inputs = fs.readFileSync(inpPath, "utf8").split("\n__ggml_vocab_test__\n");
inputs.pop(); // the file ends with a separator
for (const s of inputs) {
  process.stdout.write(tok.encode(s, { add_special_tokens: false }).join(" ") + "\n");
}
