// Drives the engine through the openai npm package itself: a streamed
// responses.create and a responses.parse with a zod schema (zodTextFormat),
// against OPENAI_BASE_URL. Prints one JSON line with what it saw; exits 1
// on any error. Run by TestTheNodeSDKDrivesTheEngine.
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';

const client = new OpenAI({ apiKey: 'sk-test', maxRetries: 0, timeout: 20000 });

const types = [];
let text = '';
const stream = await client.responses.create({ model: 'spark', input: 'Say hello.', stream: true });
for await (const event of stream) {
  types.push(event.type);
  if (event.type === 'response.output_text.delta') text += event.delta;
}

const City = z.object({
  name: z.string(),
  population: z.number().int(),
  tags: z.array(z.enum(['port', 'capital'])),
  mayor: z.string().nullable(),
});
const parsed = await client.responses.parse({
  model: 'spark',
  input: 'Name a city.',
  text: { format: zodTextFormat(City, 'city') },
  metadata: { agentloop_seed: '2' },
});

console.log(JSON.stringify({ types, text, parsed: parsed.output_parsed }));
