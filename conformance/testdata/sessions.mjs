// Drives the long-session features through the openai npm package itself,
// against OPENAI_BASE_URL (an engine whose every context window is
// WINDOW tokens): over HTTP the Conversations API, background responses
// (poll, resumed stream, cancel), compaction (standalone and automatic,
// the item sent back), the context window and truncation "auto"; over
// WebSocket mode, with the SDK's ResponsesWS, a continuation, a compaction
// and steering. Each case runs on its own; prints one JSON object, a key
// per case with what it saw or {error}. Run by TestTheNodeSDKDrivesLongSessions.
import OpenAI from 'openai';
import { ResponsesWS } from 'openai/resources/responses/ws';

const client = new OpenAI({ apiKey: 'sk-test', maxRetries: 0, timeout: 20000 });
const WINDOW = Number(process.env.WINDOW);

// words is a text of about n tokens.
const words = (n) => 'lorem '.repeat(n).trim();
const user = (text) => ({ type: 'message', role: 'user', content: text });
const weather = {
  type: 'function', name: 'get_weather', strict: true,
  parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'], additionalProperties: false },
};
// longToolTurn is a turn whose bulk is a tool output, what compaction
// replaces (the developer and user messages stay).
const longToolTurn = (n) => [
  { type: 'message', role: 'developer', content: 'You are terse.' },
  user("What's the weather in Lyon?"),
  { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"location":"Lyon"}' },
  { type: 'function_call_output', call_id: 'call_1', output: words(n) },
];
const compactAt = (n) => [{ type: 'compaction', compact_threshold: n }];
// answered is the next turn's input after resp: an output for each call,
// then a user message.
const answered = (resp) => [
  ...resp.output.filter((it) => it.type === 'function_call')
    .map((it) => ({ type: 'function_call_output', call_id: it.call_id, output: '{"temp_c":12}' })),
  user('And in Oslo?'),
];
// deadlineMs bounds every wait for a state here, as internal/wait's
// Deadline does in Go: generous, for a loaded machine under -race; it only
// turns a hang into a failure.
const deadlineMs = 30000;

// until polls f until it returns a value (a poll of a state, bounded).
async function until(what, f) {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 20));
  }
}
const errorOf = (e) => ({ name: e.constructor.name, status: e.status, code: e.code, param: e.param });

async function conversations() {
  const conv = await client.conversations.create({ metadata: { topic: 'a' }, items: [user('first')] });
  const got = await client.conversations.retrieve(conv.id);
  const updated = await client.conversations.update(conv.id, { metadata: { topic: 'b' } });
  const added = await client.conversations.items.create(conv.id, { items: [user('second'), user('third'), user('fourth')] });
  // Auto-pagination two at a time: every item once.
  const listed = [];
  for await (const it of client.conversations.items.list(conv.id, { limit: 2, order: 'asc' })) listed.push(it.id);
  const one = await client.conversations.items.retrieve(added.data[0].id, { conversation_id: conv.id });
  const afterDelete = await client.conversations.items.delete(added.data[1].id, { conversation_id: conv.id });
  const resp = await client.responses.create({ model: 'spark', conversation: conv.id, input: 'hello' });
  const items = [];
  for await (const it of client.conversations.items.list(conv.id, { order: 'asc' })) items.push(it);
  let withPrevious;
  try {
    await client.responses.create({ model: 'spark', conversation: conv.id, previous_response_id: resp.id, input: 'again' });
  } catch (e) {
    withPrevious = errorOf(e);
  }
  const deleted = await client.conversations.delete(conv.id);
  let gone;
  try {
    await client.conversations.retrieve(conv.id);
  } catch (e) {
    gone = errorOf(e);
  }
  return {
    id: conv.id, object: conv.object, retrievedTopic: got.metadata.topic, updatedTopic: updated.metadata.topic,
    added: added.data.length, listed, retrievedItem: one.id === added.data[0].id && one.content[0].text === 'second',
    afterDeleteID: afterDelete.id, responseStatus: resp.status, responseOutput: resp.output.map((it) => it.id),
    itemsAfter: items.map((it) => ({ id: it.id, type: it.type, role: it.role })),
    withPrevious, deleted: deleted.deleted, gone,
  };
}

async function background() {
  const r = await client.responses.create({ model: 'spark', background: true, input: 'hello' });
  const done = await until('a terminal status', async () => {
    const p = await client.responses.retrieve(r.id);
    return ['queued', 'in_progress'].includes(p.status) ? undefined : p;
  });
  const all = [];
  for await (const ev of await client.responses.retrieve(r.id, { stream: true })) all.push(ev);
  const resumed = [];
  for await (const ev of await client.responses.retrieve(r.id, { stream: true, starting_after: 2 })) resumed.push(ev);
  const cancelledDone = await client.responses.cancel(r.id);
  // A long one (300 tokens at 5 tokens a second), cancelled as it runs.
  const slow = await client.responses.create({ model: 'custom-5', background: true, input: 'write a long story', max_output_tokens: 300, ignore_eos: true });
  await until('in_progress', async () => ((await client.responses.retrieve(slow.id)).status === 'in_progress' ? true : undefined));
  const cancelled = await client.responses.cancel(slow.id);
  const polled = await until('cancelled', async () => {
    const p = await client.responses.retrieve(slow.id);
    return p.status === 'cancelled' ? p : undefined;
  });
  return {
    created: r.status, background: r.background, done: done.status, outputTokens: done.usage.output_tokens,
    all: all.map((ev) => [ev.type, ev.sequence_number]), resumed: resumed.map((ev) => [ev.type, ev.sequence_number]),
    cancelFinished: cancelledDone.status, cancelRunning: cancelled.status, polled: polled.status,
  };
}

async function compaction() {
  const compacted = await client.responses.compact({ model: 'spark', input: longToolTurn(800) });
  const first = await client.responses.create({ model: 'spark', tools: [weather], store: false, context_management: compactAt(500), input: longToolTurn(800) });
  // Stateless follow-up: the compaction item and what follows it, sent back.
  const cmp = first.output.findIndex((it) => it.type === 'compaction');
  const next = await client.responses.create({
    model: 'spark', tools: [weather], store: false, context_management: compactAt(500),
    input: [...first.output.slice(cmp), ...answered(first)],
  });
  return {
    standalone: { object: compacted.object, types: compacted.output.map((it) => it.type), inputTokens: compacted.usage.input_tokens, outputTokens: compacted.usage.output_tokens },
    first: { types: first.output.map((it) => it.type), blob: first.output[0].encrypted_content?.length ?? 0, inputTokens: first.usage.input_tokens },
    next: { status: next.status, types: next.output.map((it) => it.type), inputTokens: next.usage.input_tokens },
  };
}

async function contextWindow() {
  let over;
  try {
    await client.responses.create({ model: 'spark', max_output_tokens: 16, input: [user(words(WINDOW + 500))] });
  } catch (e) {
    over = { ...errorOf(e), badRequest: e instanceof OpenAI.BadRequestError };
  }
  const marker = { type: 'message', role: 'developer', content: 'You are terse.' };
  const auto = await client.responses.create({
    model: 'spark', truncation: 'auto',
    input: [marker, user(words(WINDOW * 0.6)), user(words(WINDOW * 0.3)), user('So?')],
  });
  return { over, auto: { status: auto.status, truncation: auto.truncation, inputTokens: auto.usage.input_tokens } };
}

// socket opens a ResponsesWS and returns it with next(pred), which waits
// for the next event that pred accepts, collecting every event meanwhile.
function socket() {
  const ws = new ResponsesWS(client);
  const seen = [];
  let waiter;
  const failed = [];
  ws.on('event', (ev) => {
    seen.push(ev);
    if (waiter && waiter.pred(ev)) {
      const w = waiter;
      waiter = undefined;
      w.resolve(ev);
    }
  });
  ws.on('error', (err) => failed.push(String(err.message)));
  const next = (pred) => new Promise((resolve, reject) => {
    const i = seen.findIndex((ev) => !ev.claimed && pred(ev));
    if (i >= 0) {
      seen[i].claimed = true;
      return resolve(seen[i]);
    }
    const timer = setTimeout(() => reject(new Error('no event came; errors: ' + failed.join('; '))), deadlineMs);
    waiter = { pred, resolve: (ev) => { clearTimeout(timer); ev.claimed = true; resolve(ev); } };
  });
  return { ws, seen, next };
}
const terminal = (ev) => ['response.completed', 'response.incomplete', 'response.failed', 'error'].includes(ev.type);

async function webSocket() {
  const { ws, next } = socket();
  try {
    ws.send({ type: 'response.create', model: 'spark', store: false, input: 'hello' });
    const first = await next(terminal);
    ws.send({ type: 'response.create', model: 'spark', store: false, previous_response_id: first.response.id, input: [user('again')] });
    const second = await next(terminal);
    ws.send({ type: 'response.create', model: 'spark', store: false, tools: [weather], context_management: compactAt(500), input: longToolTurn(800) });
    const cfirst = await next(terminal);
    ws.send({
      type: 'response.create', model: 'spark', store: false, tools: [weather], context_management: compactAt(500),
      previous_response_id: cfirst.response.id, input: answered(cfirst.response),
    });
    const csecond = await next(terminal);
    const brief = (ev) => ({ type: ev.type, id: ev.response?.id, inputTokens: ev.response?.usage?.input_tokens, types: ev.response?.output.map((it) => it.type), error: ev.error?.code });
    return { first: brief(first), second: brief(second), compacted: brief(cfirst), afterCompaction: brief(csecond) };
  } finally {
    ws.close({ code: 1000, reason: 'done' });
  }
}

// steer creates a slow response (a message, then a call) on a socket of
// its own and steers it at its first delta; it returns the events up to
// the successor's end (or the refusal) without the deltas.
async function steer(extra) {
  const { ws, seen, next } = socket();
  try {
    ws.send({ type: 'response.create', model: 'custom-50', store: false, input: 'Work on it.', metadata: { agentloop_reply: 'output=30;calls=10' }, ...extra });
    const created = await next((ev) => ev.type === 'response.created');
    await next((ev) => ev.type === 'response.output_text.delta');
    ws.send({ type: 'response.steer', previous_response_id: created.response.id, input: 'Stop; say bye instead.' });
    const outcome = await next((ev) => ev.type === 'response.steer.accepted' || ev.type === 'response.steer.failed');
    await next(terminal);
    if (outcome.type === 'response.steer.accepted') await next((ev) => terminal(ev) && ev.response?.id !== created.response.id);
    return seen.filter((ev) => !ev.type.endsWith('.delta')).map((ev) => ({
      type: ev.type, id: ev.response?.id, reason: ev.response?.incomplete_details?.reason,
      steer: ev.steer?.previous_response_id, steerID: ev.steer?.id, error: ev.error?.code,
    }));
  } finally {
    ws.close({ code: 1000, reason: 'done' });
  }
}

const cases = {
  conversations, background, compaction, contextWindow, webSocket,
  steered: () => steer({}),
  steerRefused: () => steer({ context_management: compactAt(3000) }),
};
const out = {};
await Promise.all(Object.entries(cases).map(async ([name, f]) => {
  try {
    out[name] = await f();
  } catch (e) {
    out[name] = { error: String(e.stack ?? e) };
  }
}));
console.log(JSON.stringify(out));
process.exit(0);
