// node e2e/llamacpp/llama_family.mjs MODEL.gguf TOKENS [N]
//
// llama.cpp (node-llama-cpp's prebuilt CPU binaries) on a Llama-family GGUF
// file: evaluates TOKENS (comma-separated ids, fed as given: no BOS added)
// in one batch, with an F32 KV cache and flash attention off, so that the
// forward is float32 arithmetic throughout; then greedy-decodes N tokens
// (default 16) through the cache, taking the argmax of llama.cpp's raw
// logits itself (ties to the lowest id, as torch.argmax). Prints one JSON
// document: {peer, kv_cache, flash_attention, vocab, logits: [per prompt
// position, V float32 values by id], greedy: [N ids], greedy_logits: [per
// greedy step, V values]}. Exit 2 when the file cannot be loaded.
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [file, tokenArg, nArg] = process.argv.slice(2);
if (!file || !tokenArg) {
    console.error("usage: node llama_family.mjs MODEL.gguf TOKENS [N]");
    process.exit(2);
}
const tokens = tokenArg.split(",").map(Number);
const N = nArg ? Number(nArg) : 16;
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
let model;
try {
    model = await llama.loadModel({modelPath: file});
} catch (e) {
    console.error(`llama.cpp cannot load ${file}: ${e.message}`);
    process.exit(2);
}
const context = await model.createContext({
    contextSize: tokens.length + N + 1, batchSize: tokens.length, threads: 1, sequences: 1,
    flashAttention: false, experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
});
const seq = context.getSequence();

// dense turns node-llama-cpp's id -> logit map into a dense array by id.
function dense(map) {
    let n = 0;
    for (const id of map.keys()) n = Math.max(n, id + 1);
    const out = new Array(n).fill(null);
    for (const [id, v] of map) out[id] = v;
    return out;
}

function argmax(a) {
    let best = 0;
    for (let i = 1; i < a.length; i++) if (a[i] > a[best]) best = i;
    return best;
}

const want = {generateNext: {logits: true}};
const res = await seq.controlledEvaluate(tokens.map((t) => [t, want]));
const logits = res.map((r) => dense(r.next.logits));
const greedy = [], greedyLogits = [];
let last = logits[logits.length - 1];
for (let i = 0; i < N; i++) {
    const t = argmax(last);
    greedy.push(t);
    if (i === N - 1) break;
    const r = await seq.controlledEvaluate([[t, want]]);
    last = dense(r[0].next.logits);
    greedyLogits.push(last);
}
console.log(JSON.stringify({
    peer: `llama.cpp ${llama.llamaCppRelease.release} (node-llama-cpp prebuilt, CPU)`,
    kv_cache: [context.kvCacheKeyType, context.kvCacheValueType],
    flash_attention: context.flashAttention,
    vocab: logits[0].length,
    logits, greedy, greedy_logits: greedyLogits,
}));
await context.dispose();
await model.dispose();
await llama.dispose();
