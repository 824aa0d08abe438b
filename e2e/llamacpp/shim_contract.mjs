// node e2e/llamacpp/shim_contract.mjs URL
//
// What the `ggml serve` shim promises besides its numbers (those are
// same_numbers.mjs's): the OpenAI answers probe and lm-evaluation-harness
// read, and a 400 naming the field for what it does not do, never a
// silently different computation. Exit 0 when every check holds.
const url = process.argv[2];
let failed = 0;
function check(what, ok, detail) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${ok ? "" : `: ${detail}`}`);
  if (!ok) failed++;
}
async function complete(body) {
  const r = await fetch(`${url}/v1/completions`, { method: "POST", body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

const prompt = [464, 3290, 318]; // "The ship is"
const models = await (await fetch(`${url}/v1/models`)).json();
check("GET /v1/models is a model list", models.object === "list" && models.data.length === 1, JSON.stringify(models));

// echo with logprobs and no generation: one log-probability per prompt
// token, the first null (no context), alternatives beside each.
const echo = (await complete({ prompt, max_tokens: 0, echo: true, logprobs: 2, temperature: 0 })).body.choices[0];
const lp = echo.logprobs;
check("echo, max_tokens 0: a log-probability per prompt token, the first null",
  lp.token_logprobs.length === 3 && lp.token_logprobs[0] === null && lp.token_logprobs.slice(1).every((v) => v < 0),
  JSON.stringify(lp.token_logprobs));
check("echo: the text is the prompt's and its offsets index it",
  echo.text === lp.tokens.join("") && lp.text_offset.every((o, i) => echo.text.startsWith(lp.tokens[i], o)), JSON.stringify(echo));
check("logprobs 2: two alternatives per position after the first",
  lp.top_logprobs.slice(1).every((m) => Object.keys(m).length === 2), JSON.stringify(lp.top_logprobs));

// Greedy generation, with and without echo and logprobs, is the same text.
const gen = (await complete({ prompt, max_tokens: 4, echo: true, logprobs: 1 })).body.choices[0];
const plain = (await complete({ prompt, max_tokens: 4 })).body.choices[0];
check("without echo the text is the generated tokens' alone, the same greedy ones",
  plain.text === gen.logprobs.tokens.slice(3).join("") && gen.text === echo.text + plain.text,
  `${JSON.stringify(plain.text)} vs ${JSON.stringify(gen.logprobs.tokens.slice(3))}`);
check("without logprobs there are none", plain.logprobs === null, JSON.stringify(plain.logprobs));
check("max_tokens reached: finish_reason length", plain.finish_reason === "length", plain.finish_reason);
// logprobs 1 lists the most likely token alone: greedy must have chosen it.
const top1 = gen.logprobs.top_logprobs[3];
check("the generated token is the most likely one",
  Object.keys(top1).length === 1 && top1[gen.logprobs.tokens[3]] === gen.logprobs.token_logprobs[3], JSON.stringify(top1));

// What the shim does not do is refused, naming it.
for (const [what, body, needle] of [
  ["sampling (temperature 0.7)", { prompt, temperature: 0.7 }, "temperature"],
  ["an unknown field (stop)", { prompt, stop: ["\n"] }, "stop"],
  ["a text prompt", { prompt: "The ship" }, "prompt"],
  ["logprobs above 20", { prompt, logprobs: 21 }, "logprobs"],
  ["a token outside the vocabulary", { prompt: [50257] }, "vocabulary"],
]) {
  const r = await complete(body);
  check(`refused with 400 naming it: ${what}`, r.status === 400 && r.body.error.message.includes(needle), JSON.stringify(r));
}
process.exit(failed ? 1 : 0);
