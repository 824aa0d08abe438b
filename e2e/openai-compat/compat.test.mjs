// The official OpenAI Node SDK against a running `llorch-check serve` on
// the tiny model: every route a client of OpenAI's API uses, parsed by the
// SDK itself. OPENAI_BASE_URL is the server's /v1; run.sh starts one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';

const baseURL = process.env.OPENAI_BASE_URL;
assert.ok(baseURL, 'OPENAI_BASE_URL must name the server, e.g. http://127.0.0.1:8080/v1');
const client = new OpenAI({ baseURL, apiKey: process.env.OPENAI_API_KEY ?? 'none', maxRetries: 0 });
const model = process.env.OPENAI_MODEL ?? 'tiny-gpt2';
const messages = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Hello' },
];

test('models: list and retrieve', async () => {
  const list = [];
  for await (const m of client.models.list()) list.push(m);
  assert.deepEqual(list.map((m) => m.id), [model]);
  const one = await client.models.retrieve(model);
  assert.equal(one.id, model);
  assert.equal(one.object, 'model');
});

test('completions: greedy text with logprobs, and the same text streamed', async () => {
  const params = { model, prompt: 'The ship left port', max_tokens: 8, temperature: 0, logprobs: 2 };
  const c = await client.completions.create(params);
  assert.equal(c.object, 'text_completion');
  const choice = c.choices[0];
  assert.equal(choice.finish_reason, 'length');
  assert.equal(choice.logprobs.tokens.length, 8);
  assert.equal(choice.logprobs.tokens.join(''), choice.text);
  assert.equal(c.usage.completion_tokens, 8);

  const stream = await client.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let usage;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) text += ch.text;
  }
  assert.equal(text, choice.text);
  assert.deepEqual(usage, c.usage);
});

test('completions: echo scoring as lm-evaluation-harness asks', async () => {
  const c = await client.completions.create({ model, prompt: 'The capital of France is Paris', max_tokens: 0, echo: true, logprobs: 1 });
  const lp = c.choices[0].logprobs;
  assert.equal(lp.token_logprobs[0], null);
  assert.equal(lp.token_logprobs.length, c.usage.prompt_tokens);
  assert.ok(lp.token_logprobs.slice(1).every((x) => x < 0));
});

test('chat: message, logprobs, and the same text streamed with usage', async () => {
  const params = { model, messages, max_completion_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 2 };
  const c = await client.chat.completions.create(params);
  assert.equal(c.object, 'chat.completion');
  const choice = c.choices[0];
  assert.equal(choice.message.role, 'assistant');
  assert.equal(choice.logprobs.content.map((t) => t.token).join(''), choice.message.content);
  assert.ok(choice.logprobs.content.every((t) => t.top_logprobs.length === 2));

  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let usage;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) text += ch.delta.content ?? '';
  }
  assert.equal(text, choice.message.content);
  assert.deepEqual(usage, c.usage);

  // The SDK's own stream helper accumulates the deltas into a message.
  const runner = client.chat.completions.stream({ model, messages, max_tokens: 6, temperature: 0 });
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0].message.content, choice.message.content);
});

test('chat: structured output, response_format json_schema with n: 2, every choice JSON of the schema', async () => {
  const schema = {
    type: 'object',
    properties: { name: { type: 'string', maxLength: 6 }, age: { type: 'integer' }, happy: { type: 'boolean' } },
    required: ['name', 'age', 'happy'],
    additionalProperties: false,
  };
  for (const seed of [1, 2, 3]) {
    const c = await client.chat.completions.create({
      model, messages, n: 2, seed, max_tokens: 80,
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema, strict: true } },
    });
    assert.equal(c.choices.length, 2);
    for (const choice of c.choices) {
      assert.equal(choice.finish_reason, 'stop');
      const p = JSON.parse(choice.message.content);
      assert.deepEqual(Object.keys(p).sort(), ['age', 'happy', 'name']);
      assert.ok(typeof p.name === 'string' && [...p.name].length <= 6, choice.message.content);
      assert.ok(Number.isInteger(p.age), choice.message.content);
      assert.equal(typeof p.happy, 'boolean');
    }
  }
  // json_object: any object; the SDK's parse helper with a zod schema.
  const o = await client.chat.completions.create({ model, messages, seed: 4, max_tokens: 100, response_format: { type: 'json_object' } });
  if (o.choices[0].finish_reason === 'stop') assert.equal(typeof JSON.parse(o.choices[0].message.content), 'object');
});

test('responses: output text and usage, the same text streamed and through the stream helper', async () => {
  const params = { model, instructions: 'Be brief.', input: 'Hello', max_output_tokens: 6, temperature: 0 };
  const r = await client.responses.create(params);
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.equal(r.status, 'incomplete');
  assert.equal(r.incomplete_details.reason, 'max_output_tokens');
  assert.equal(r.usage.output_tokens, 6);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + 6);
  assert.equal(r.output[0].type, 'message');
  // output_text is the SDK's own sum of the output's text parts.
  assert.equal(r.output_text, r.output[0].content[0].text);
  // instructions and input are the chat messages, rendered alike.
  const c = await client.chat.completions.create({ model, messages, max_tokens: 6, temperature: 0 });
  assert.equal(r.output_text, c.choices[0].message.content);
  assert.equal(r.usage.input_tokens, c.usage.prompt_tokens);

  const stream = await client.responses.create({ ...params, stream: true });
  let text = '';
  const types = [];
  let last;
  for await (const event of stream) {
    assert.equal(event.sequence_number, types.length);
    types.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
    last = event;
  }
  assert.equal(text, r.output_text);
  assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
  assert.equal(last.type, 'response.incomplete');
  assert.equal(last.response.usage.output_tokens, 6);

  const final = await client.responses.stream(params).finalResponse();
  assert.equal(final.output_text, r.output_text);
  assert.equal(final.status, 'incomplete');
});

test('responses: structured output through the SDK parse helper and a zod schema', async () => {
  const Person = z.object({ name: z.string().max(6), happy: z.boolean() });
  for (let i = 0; i < 3; i++) {
    const r = await client.responses.parse({ model, input: 'A person:', max_output_tokens: 60, text: { format: zodTextFormat(Person, 'person') } });
    assert.equal(r.status, 'completed');
    assert.deepEqual(Object.keys(r.output_parsed).sort(), ['happy', 'name']);
    assert.equal(r.text.format.name, 'person');
  }
});

test('responses: what this server cannot do raises the SDK error classes naming the field', async () => {
  await assert.rejects(client.responses.create({ model, input: 'Hi', previous_response_id: 'resp_1' }), (err) => {
    assert.ok(err instanceof OpenAI.NotFoundError, err.constructor.name);
    assert.equal(err.param, 'previous_response_id');
    assert.match(err.message, /not found/);
    return true;
  });
  await assert.rejects(client.responses.create({ model, input: 'Hi', tools: [{ type: 'function', name: 'f', parameters: {} }] }), (err) => {
    assert.ok(err instanceof OpenAI.BadRequestError);
    assert.equal(err.param, 'tools');
    return true;
  });
  await assert.rejects(client.responses.create({ model: 'gpt-4o', input: 'Hi' }), (err) => {
    assert.ok(err instanceof OpenAI.NotFoundError);
    assert.equal(err.code, 'model_not_found');
    return true;
  });
});

test('embeddings: base64 (the SDK default) and float agree', async () => {
  const input = ['Hello.', 'The ship left port'];
  const b64 = await client.embeddings.create({ model, input });
  const floats = await client.embeddings.create({ model, input, encoding_format: 'float' });
  assert.equal(b64.data.length, 2);
  for (let i = 0; i < 2; i++) {
    assert.equal(b64.data[i].index, i);
    // JSON carries the shortest decimal of each float32; base64 its bits.
    assert.deepEqual(b64.data[i].embedding, floats.data[i].embedding.map(Math.fround));
    assert.ok(b64.data[i].embedding.length > 0);
  }
  assert.notDeepEqual(b64.data[0].embedding, b64.data[1].embedding);
});

test('errors: the SDK raises its classes with param and code', async () => {
  await assert.rejects(client.chat.completions.create({ model, messages, n: 0 }), (err) => {
    assert.ok(err instanceof OpenAI.BadRequestError, err.constructor.name);
    assert.equal(err.status, 400);
    assert.equal(err.param, 'n');
    assert.equal(err.type, 'invalid_request_error');
    return true;
  });
  await assert.rejects(client.completions.create({ model, prompt: 'x', top_a: 0.5 }), (err) => {
    assert.ok(err instanceof OpenAI.BadRequestError);
    assert.equal(err.param, 'top_a');
    return true;
  });
  await assert.rejects(client.models.retrieve('gpt-4'), (err) => {
    assert.ok(err instanceof OpenAI.NotFoundError, err.constructor.name);
    assert.equal(err.code, 'model_not_found');
    return true;
  });
  await assert.rejects(client.chat.completions.create({ model: 'gpt-4', messages }), (err) => {
    assert.ok(err instanceof OpenAI.NotFoundError);
    assert.equal(err.param, 'model');
    return true;
  });
  await assert.rejects(client.get('/no-such-route'), (err) => {
    assert.ok(err instanceof OpenAI.NotFoundError);
    assert.equal(err.code, 'NOT_FOUND');
    return true;
  });
});
