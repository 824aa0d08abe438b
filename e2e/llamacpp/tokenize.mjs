// node e2e/llamacpp/tokenize.mjs MODEL.gguf < TEXTS.json
//
// llama.cpp's tokenizer (node-llama-cpp's prebuilt CPU binaries, the
// vocabulary only) on a GGUF file: tokenizes each string of the JSON array
// on stdin twice, as text (no special tokens parsed) and with special
// tokens parsed, adding neither BOS nor EOS (llama.cpp's common_tokenize
// with add_special false). Prints one JSON document: {peer, bos, eos, eot,
// add_bos, plain: [ids per string], special: [ids per string]}. Exit 2
// when the file cannot be loaded.
import {readFileSync} from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [file] = process.argv.slice(2);
if (!file) {
    console.error("usage: node tokenize.mjs MODEL.gguf < TEXTS.json");
    process.exit(2);
}
const texts = JSON.parse(readFileSync(0, "utf8"));
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
let model;
try {
    model = await llama.loadModel({modelPath: file, vocabOnly: true});
} catch (e) {
    console.error(`llama.cpp cannot load ${file}: ${e.message}`);
    process.exit(2);
}
const t = model.tokens;
const out = {
    peer: `llama.cpp via node-llama-cpp (${llama.buildType} build, ${llama.gpu || "cpu"})`,
    bos: t.bos, eos: t.eos, eot: t.eot, add_bos: t.shouldPrependBosToken,
    plain: texts.map((s) => Array.from(model.tokenize(s, false))),
    special: texts.map((s) => Array.from(model.tokenize(s, true))),
};
console.log(JSON.stringify(out));
await model.dispose();
await llama.dispose();
