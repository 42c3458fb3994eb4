package views

import (
	"strings"

	"agentloop/api"
	"agentloop/docs/snippets"
)

type endpoint struct{ path, what string }

var endpoints = []endpoint{
	{"POST /v1/responses", "Create a response; \"stream\": true answers with SSE."},
	{"GET /v1/responses/{id}", "Retrieve a stored response."},
	{"DELETE /v1/responses/{id}", "Delete a stored response."},
	{"GET /v1/responses/{id}/input_items", "List a response's own input items."},
	{"POST /v1/responses/input_tokens", "Count a create body's input tokens, as its usage would: {\"object\":\"response.input_tokens\",\"input_tokens\":N}."},
	{"GET /v1/models, GET /v1/models/{id}", "The built-in models; custom-<tps> names are served but not listed."},
	{"GET /v1/responses (Upgrade: websocket)", "WebSocket mode: many response.create messages over one connection, in order; each stream_id names a lane of its own, and lanes run at once."},
	{"/baseline/v1/…", "The same engine with its request-level caches off, as before the HTTP optimizations."},
	{"GET /api/traces/{id}", "The engine's trace of a response: every stage, measured or modelled."},
	{"POST /api/runs", "Start a race: {scenario, profile, rtt_ms, tool_time_ms, lanes, seed, sequential, take_turns, repeats, drills} → {id}."},
	{"GET /api/runs, GET /api/runs/{id}, DELETE /api/runs/{id}", "List (?scenario=&profile=&since=&until=), read and delete stored races."},
	{"GET /api/sessions, GET /api/sessions/{id}, GET /api/sessions/{id}/export", "The inspector's client sessions (?limit=), one with its turns, and its JSON as a download; the page is /inspect."},
	{"POST /api/drills, GET /api/drills, GET /api/drills/{id}, DELETE /api/drills/{id}", "Arm a fault drill {drill, after_turns, times, duration_ms, scope} (201), list the armed drills with their firings, read one, disarm one."},
	{"GET /metrics", "Prometheus metrics."},
}

// testHooks are the pages' hooks for browser tests: data-testid values
// (Playwright: getByTestId) and the html[data-ready] marks.
var testHooks = []endpoint{
	{`html[data-ready="race"]`, "/race: the race script is wired up (the form submits, the live feed opens)."},
	{`html[data-ready="explorer"]`, "/explorer: the explorer script is wired up; Send works."},
	{"race-scenario, race-profile, race-stack, race-rtt, race-decode-tps", "/race: the form's scenario, profile and stack selects, round trip and decode rate inputs."},
	{"race-start, race-cancel", "/race: start the race; cancel the running one."},
	{"lane-http, lane-http-optimized, lane-http-chained, lane-ws", "/race: a lane's card; inside it, lane-status holds queued, running, passed, failed, interrupted or cancelled."},
	{"race-summary", "/race: the result's headline, shown when the race ends."},
	{"race-time-went, race-what-it-takes, race-time-bars, overhead-x", "/race: where the time went, what it would take, the stacked bars, the overhead chart's x-axis choice."},
	{"present-story", "/race?present: presenter mode's three-step story (keys: S start, R reset)."},
	{"explorer-body, explorer-send-ws, explorer-send-http, explorer-events", "/explorer: the request body, the two send buttons, the event table; each event row is data-testid=\"event\" with data-type set to the event type."},
	{"explorer-send-raw, explorer-compare, explorer-diff", "/explorer: send the body as one frame exactly as typed; send it over HTTP and then WebSocket; the two traces side by side (rows carry data-stage)."},
	{"explorer-headers, explorer-ws-query, explorer-history, history-item", "/explorer: the HTTP headers, the upgrade's query (agentloop_stack=…), the stored history and each request in it (data-transport)."},
	{"race-busy, race-overlap", "/race: the warning before a race starts beside another, and the result's note that it overlapped one."},
	{"run-row", "/runs: one run, with data-run set to its id."},
	{"sweep-chart, sweep-line, sweep-empty", "/sweep: a scenario's chart, one line of it (data-stack, data-lane), the empty state."},
	{"logout", "The header's Sign out button, on a server with --api-key."},
}

func playwrightSnippet(d Docs) string {
	return strings.NewReplacer("BASE", d.BaseURL).Replace(`// Playwright (TypeScript): race over the instant profile and read the result.
await page.goto("BASE/race");
await expect(page.locator('html[data-ready="race"]')).toHaveCount(1);
await page.getByTestId("race-profile").selectOption("instant");
await page.getByTestId("race-start").click();
await expect(page.getByTestId("lane-ws").getByTestId("lane-status")).toHaveText("passed", { timeout: 120_000 });
await expect(page.getByTestId("race-summary")).toContainText("finished");`)
}

func keyLine(d Docs) string {
	if d.KeyRequired {
		return "YOUR_KEY"
	}
	return "local"
}

func goSnippet(d Docs) string {
	return strings.NewReplacer("BASE", d.BaseURL, "KEY", keyLine(d), "MODEL", api.DefaultModel).Replace(`client := openai.NewClient(
	option.WithBaseURL("BASE/v1/"),
	option.WithAPIKey("KEY"),
)

// HTTP + SSE
stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
	Model: "MODEL",
	Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello")},
})
for stream.Next() {
	ev := stream.Current()
	fmt.Println(ev.SequenceNumber, ev.Type)
}

// WebSocket mode (openai-go v3.99+): the URL is derived from the base URL.
conn, err := client.Responses.Connect(ctx, responses.ResponseConnectionOptions{})
if err != nil {
	return err
}
defer conn.Close()
err = conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{
	Model: "MODEL", Store: openai.Bool(false),
	Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfString: openai.String("Hello")},
})
first, err := conn.FinalResponse(ctx)`)
}

func nodeSnippet(d Docs) string {
	return strings.NewReplacer("BASE", d.BaseURL, "KEY", keyLine(d), "MODEL", api.DefaultModel).Replace(`import OpenAI from "openai";
import { ResponsesWS } from "openai/resources/responses/ws"; // needs the "ws" package

const client = new OpenAI({ baseURL: "BASE/v1", apiKey: "KEY" });

// HTTP + SSE
const stream = await client.responses.create({ model: "MODEL", input: "Hello", stream: true });
for await (const event of stream) console.log(event.sequence_number, event.type);

// WebSocket mode
const ws = new ResponsesWS(client);
ws.on("event", (event) => console.log(event.type));
ws.send({ type: "response.create", model: "MODEL", input: "Hello", store: false });`)
}

// snippet is one of the snippets the README shows too (docs/snippets),
// with this server's address, and a placeholder key when it needs one.
func snippet(d Docs, name string) string {
	key := snippets.DefaultKey
	if d.KeyRequired {
		key = "YOUR_KEY"
	}
	return snippets.For(name, d.BaseURL, strings.TrimSuffix(d.WSURL, "/v1/responses"), key)
}

func vercelSnippet(d Docs) string {
	return strings.NewReplacer("BASE", d.BaseURL, "KEY", keyLine(d), "MODEL", api.DefaultModel).Replace(`import { createOpenAI } from "@ai-sdk/openai"; // 4.x, with ai 7.x
import { streamText } from "ai";

const openai = createOpenAI({ baseURL: "BASE/v1", apiKey: "KEY" });
const result = streamText({ model: openai.responses("MODEL"), prompt: "Hello" });
for await (const text of result.textStream) process.stdout.write(text);`)
}
