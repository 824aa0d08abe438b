// The Vercel AI SDK's default OpenAI provider against a running
// `llorch-check serve`: openai('model') calls the Responses API
// (/v1/responses) since AI SDK 5; provider.chat('model') calls chat
// completions, for comparison. OPENAI_BASE_URL is the server's /v1.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { APICallError, generateObject, generateText, streamObject, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';

const baseURL = process.env.OPENAI_BASE_URL;
assert.ok(baseURL, 'OPENAI_BASE_URL must name the server, e.g. http://127.0.0.1:8080/v1');
const model = process.env.OPENAI_MODEL ?? 'tiny-gpt2';
const paths = [];
const openai = createOpenAI({
  baseURL,
  apiKey: process.env.OPENAI_API_KEY ?? 'none',
  fetch: (url, init) => {
    paths.push(new URL(url).pathname);
    return fetch(url, init);
  },
});
const settings = { system: 'Be brief.', prompt: 'Hello', maxOutputTokens: 6, temperature: 0, maxRetries: 0 };

// chat is what the chat completions route answers to the same prompt.
async function chat() {
  const c = await generateText({ model: openai.chat(model), ...settings });
  assert.equal(paths.at(-1), '/v1/chat/completions');
  return c;
}

test('generateText: the default provider calls /v1/responses and reads text, finish reason and usage', async () => {
  const r = await generateText({ model: openai(model), ...settings });
  assert.equal(paths.at(-1), '/v1/responses');
  assert.deepEqual(r.warnings, []);
  assert.equal(r.finishReason, 'length');
  assert.equal(r.usage.outputTokens, 6);
  assert.equal(r.usage.totalTokens, r.usage.inputTokens + 6);
  assert.match(r.providerMetadata.openai.responseId, /^resp_/);
  const c = await chat();
  assert.equal(r.text, c.text);
  assert.equal(r.usage.inputTokens, c.usage.inputTokens);
});

test('streamText: the same text, finish reason and usage from the Responses events', async () => {
  const errors = [];
  const s = streamText({ model: openai(model), ...settings, onError: ({ error }) => errors.push(error) });
  let text = '';
  for await (const delta of s.textStream) text += delta;
  assert.equal(paths.at(-1), '/v1/responses');
  assert.deepEqual(errors, []);
  assert.equal(await s.finishReason, 'length');
  assert.equal((await s.usage).outputTokens, 6);
  assert.equal(text, (await chat()).text);
  assert.equal(await s.text, text);
});

test('generateObject and streamObject: text.format json_schema from a zod schema, the object parsed by the SDK', async () => {
  const schema = z.object({ name: z.string().max(6), age: z.number(), happy: z.boolean() });
  const params = { model: openai(model), schema, prompt: 'A person:', maxOutputTokens: 100, maxRetries: 0 };
  for (let i = 0; i < 3; i++) {
    const r = await generateObject(params);
    assert.equal(paths.at(-1), '/v1/responses');
    assert.equal(r.finishReason, 'stop');
    assert.deepEqual(Object.keys(r.object).sort(), ['age', 'happy', 'name']);
  }
  const s = streamObject(params);
  let partials = 0;
  for await (const _ of s.partialObjectStream) partials++;
  assert.ok(partials > 1, 'the object arrives in pieces');
  assert.equal(typeof (await s.object).happy, 'boolean');
  assert.equal(await s.finishReason, 'stop');
});

test('generateObject through chat completions (response_format json_schema), an integer field: zod bounds it by ±(2^53−1)', async () => {
  const schema = z.object({ age: z.number().int(), happy: z.boolean() });
  for (let i = 0; i < 3; i++) {
    const r = await generateObject({ model: openai.chat(model), schema, prompt: 'A person:', maxOutputTokens: 60, maxRetries: 0, seed: i });
    assert.equal(paths.at(-1), '/v1/chat/completions');
    assert.equal(r.finishReason, 'stop');
    assert.ok(Number.isSafeInteger(r.object.age), JSON.stringify(r.object));
    assert.equal(typeof r.object.happy, 'boolean');
  }
});

test('a conversation: three turns, earlier replies by reference (the default: stored) as by text (store: false)', async () => {
  const first = await generateText({ model: openai(model), ...settings });
  let messages = [{ role: 'user', content: 'Hello' }, ...first.response.messages, { role: 'user', content: 'Again' }];
  const turn = { maxOutputTokens: 4, temperature: 0, maxRetries: 0 };
  const byText = await generateText({ model: openai(model), messages, ...turn, providerOptions: { openai: { store: false } } });
  const byRef = await generateText({ model: openai(model), messages, ...turn });
  assert.equal(byRef.text, byText.text);
  assert.equal(byRef.usage.inputTokens, byText.usage.inputTokens);
  assert.ok(byRef.usage.inputTokens > first.usage.inputTokens);

  messages = [...messages, ...byRef.response.messages, { role: 'user', content: 'Once more' }];
  const third = await generateText({ model: openai(model), messages, ...turn });
  assert.equal(third.usage.outputTokens, 4);
  assert.ok(third.usage.inputTokens > byRef.usage.inputTokens);
});

test('errors: what this server cannot do is an APICallError naming the field', async () => {
  await assert.rejects(generateText({ model: openai(model), prompt: 'Hi', maxRetries: 0,
    providerOptions: { openai: { previousResponseId: 'resp_1' } } }), (err) => {
    assert.ok(APICallError.isInstance(err), err.constructor.name);
    assert.equal(err.statusCode, 404);
    assert.match(err.message, /response "resp_1" not found/);
    return true;
  });
});
