// llama.cpp (node-llama-cpp's prebuilt binaries) against llorch-check on
// the GGUF files `llorch-check convert` writes. For each type and each
// reference case, llorch-check greedy-decodes N tokens; llama.cpp loads the
// same file and is fed the same tokens (teacher forcing), and at every step
// its next-token distribution is compared with ours: does its argmax agree,
// and by how much do its log-probabilities of our 20 most probable tokens
// differ. F32 and F16 must agree at every determinate step: one where our
// top-1 − top-2 margin exceeds twice llama.cpp's largest |Δ log p| there,
// so that its documented approximations (float16 GELU table, ~1e-2) cannot
// swap the two. A step inside that is a near-tie, reported with both
// margins; its argmax depends on the CPU's kernels (prebuilt llama.cpp
// picks AVX2 or AVX-512 ones), and more than one per case fails, since a
// file llama.cpp misreads disagrees nearly everywhere. BF16 and Q8_0 are
// reported: llama.cpp rounds activations to bfloat16 for BF16 weights and
// quantises them to 8 bits for Q8_0 weights, so its argmax may leave ours
// at a near-tie (docs/gguf.md). With a GGML tool (cmd/llamacpp-ggml)
// the F32 file is also quantised by llama.cpp's own llama_model_quantize
// to Q4_0 ... Q4_K_M, files llorch-check must read as llama.cpp wrote
// them; those are reported too.
// Exit 0 when the assertions hold, 1 when not, 2 when a file cannot be made
// or loaded.
// Usage: node interop.mjs LLORCH_CHECK HF_MODEL_DIR MANIFEST.json TMPDIR [GGML_TOOL]
import {execFileSync} from "node:child_process";
import {readFileSync} from "node:fs";
import {join} from "node:path";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const N = 16;
const TYPES = [["f32", true], ["f16", true], ["bf16", false], ["q8_0", false]]; // [type, argmax must agree]
const [bin, modelDir, manifestPath, tmp, ggmlTool] = process.argv.slice(2);
// Made by llama.cpp's quantizer from our F32 file.
const QUANTIZED = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K_M", "Q5_K_M", "Q6_K"];
if (!tmp) {
    console.error("usage: node interop.mjs LLORCH_CHECK HF_MODEL_DIR MANIFEST.json TMPDIR");
    process.exit(2);
}
const cases = JSON.parse(readFileSync(manifestPath, "utf8")).cases;
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
console.log(`peer: llama.cpp ${llama.llamaCppRelease.release} (node-llama-cpp prebuilt, CPU)`);

// ours: N greedy tokens with our 20 most probable alternatives at each step.
function ours(file, prompt) {
    return JSON.parse(execFileSync(bin, ["generate", "--model", file, "--tokens", prompt.join(","),
        "--max-tokens", String(N), "--temperature", "0", "--json", "--logprobs", "20"], {encoding: "utf8"}));
}

// theirs: llama.cpp's distribution at each step, fed our tokens.
async function theirs(model, prompt, tokens) {
    const context = await model.createContext({contextSize: model.trainContextSize, batchSize: prompt.length, threads: 2});
    const steps = [];
    const gen = context.getSequence().evaluateWithMetadata(prompt, {probabilities: true}, {temperature: 0});
    let r = await gen.next();
    while (!r.done) {
        steps.push(r.value.probabilities);
        if (steps.length >= tokens.length) break;
        r = await gen.next(tokens[steps.length - 1]); // feed our token, not llama.cpp's
    }
    await gen.return();
    await context.dispose();
    return steps;
}

let failed = 0;
const files = TYPES.map(([type, strict]) => [type, strict, () => {
    const file = join(tmp, `tiny-${type}.gguf`);
    execFileSync(bin, ["convert", "--to", "gguf", "--type", type, modelDir, file], {stdio: ["ignore", "ignore", "inherit"]});
    return file;
}]);
if (ggmlTool) {
    for (const q of QUANTIZED) {
        files.push([q, false, () => {
            const file = join(tmp, `tiny-${q}.gguf`);
            execFileSync(ggmlTool, ["quantize", join(tmp, "tiny-f32.gguf"), file, q], {stdio: ["ignore", "ignore", "ignore"]});
            return file;
        }]);
    }
}
for (const [type, strict, make] of files) {
    const file = make();
    let model;
    try {
        model = await llama.loadModel({modelPath: file});
    } catch (e) {
        console.error(`${type}: llama.cpp cannot load ${file}: ${e.message}`);
        process.exit(2);
    }
    for (const c of cases) {
        const doc = ours(file, c.tokens);
        const steps = await theirs(model, c.tokens, doc.tokens);
        let agree = 0, worst = 0, firstMiss = -1, nearTies = 0, determinateMisses = 0;
        steps.forEach((p, i) => {
            const argmax = p.keys().next().value; // entries come most probable first
            let delta = 0;
            for (const t of doc.logprobs[i].top) {
                delta = Math.max(delta, Math.abs(Math.log(p.get(t.id) ?? 0) - t.logprob));
            }
            worst = Math.max(worst, delta);
            if (argmax === doc.tokens[i]) {
                agree++;
                return;
            }
            if (firstMiss < 0) firstMiss = i;
            const top = doc.logprobs[i].top;
            const margin = top.length >= 2 ? top[0].logprob - top[1].logprob : Infinity;
            if (margin < 2 * delta) nearTies++;
            else determinateMisses++;
        });
        const ok = steps.length === doc.tokens.length && (!strict || (determinateMisses === 0 && nearTies <= 1));
        let line = `${type.padEnd(6)} ${c.id.padEnd(6)} argmax agrees ${agree}/${doc.tokens.length}` +
            (nearTies > 0 ? ` (${nearTies} near-tie${nearTies > 1 ? "s" : ""})` : "") +
            `, max |Δ log p| over our top 20 ${worst.toExponential(2)}`;
        if (firstMiss >= 0) {
            const p = steps[firstMiss], mine = doc.logprobs[firstMiss];
            const other = p.keys().next().value;
            const ourOther = mine.top.find(t => t.id === other);
            const top = mine.top;
            const margin = top.length >= 2 ? top[0].logprob - top[1].logprob : Infinity;
            line += `; step ${firstMiss}: our top-1 − top-2 ${margin.toExponential(2)}, ours ${mine.id} (log p ${mine.logprob.toFixed(4)} here, ` +
                `${Math.log(p.get(mine.id)).toFixed(4)} in llama.cpp), llama.cpp ${other} ` +
                `(${ourOther ? ourOther.logprob.toFixed(4) : "outside our top 20"} here, ${Math.log(p.get(other)).toFixed(4)} in llama.cpp)`;
        }
        console.log((ok ? "" : "FAIL ") + line);
        if (!ok) failed++;
    }
    await model.dispose();
}
await llama.dispose();
console.log(`llama.cpp interop: ${failed === 0 ? "passed" : `${failed} FAILED`}`);
process.exit(failed === 0 ? 0 : 1);
