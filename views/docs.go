package views

import "strings"

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
	{"POST /api/runs", "Start a race: {scenario, profile, rtt_ms, tool_time_ms, lanes, seed, sequential, repeats, drills} → {id}."},
	{"GET /api/runs, GET /api/runs/{id}, DELETE /api/runs/{id}", "List (?scenario=&profile=&since=&until=), read and delete stored races."},
	{"GET /api/sessions, GET /api/sessions/{id}, GET /api/sessions/{id}/export", "The inspector's client sessions (?limit=), one with its turns, and its JSON as a download; the page is /inspect."},
	{"POST /api/drills, GET /api/drills, GET /api/drills/{id}, DELETE /api/drills/{id}", "Arm a fault drill {drill, after_turns, times, duration_ms, scope} (201), list the armed drills with their firings, read one, disarm one."},
	{"GET /metrics", "Prometheus metrics."},
}

func keyLine(d Docs) string {
	if d.KeyRequired {
		return "YOUR_KEY"
	}
	return "local"
}

func goSnippet(d Docs) string {
	return strings.NewReplacer("BASE", d.BaseURL, "KEY", keyLine(d)).Replace(`client := openai.NewClient(
	option.WithBaseURL("BASE/v1/"),
	option.WithAPIKey("KEY"),
)

// HTTP + SSE
stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
	Model: "spark",
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
	Model: "spark", Store: openai.Bool(false),
	Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfString: openai.String("Hello")},
})
first, err := conn.FinalResponse(ctx)`)
}

func pythonSnippet(d Docs) string {
	return strings.NewReplacer("BASE", d.BaseURL, "KEY", keyLine(d)).Replace(`from openai import OpenAI

client = OpenAI(base_url="BASE/v1", api_key="KEY")

# HTTP + SSE
for event in client.responses.create(model="spark", input="Hello", stream=True):
    print(event.sequence_number, event.type)

# WebSocket mode: pip install "openai[realtime]>=3.8.0"
with client.responses.connect() as conn:
    conn.response.create(model="spark", input="Hello", store=False)
    for event in conn:
        print(event.type)
        if event.type in ("response.completed", "response.failed", "response.incomplete", "error"):
            break`)
}

func nodeSnippet(d Docs) string {
	return strings.NewReplacer("BASE", d.BaseURL, "KEY", keyLine(d)).Replace(`import OpenAI from "openai";
import { ResponsesWS } from "openai/resources/responses/ws"; // needs the "ws" package

const client = new OpenAI({ baseURL: "BASE/v1", apiKey: "KEY" });

// HTTP + SSE
const stream = await client.responses.create({ model: "spark", input: "Hello", stream: true });
for await (const event of stream) console.log(event.sequence_number, event.type);

// WebSocket mode
const ws = new ResponsesWS(client);
ws.on("event", (event) => console.log(event.type));
ws.send({ type: "response.create", model: "spark", input: "Hello", store: false });`)
}

func codexSnippet(d Docs) string {
	s := strings.NewReplacer("BASE", d.BaseURL).Replace(`model = "spark"
model_provider = "agentloop"

[model_providers.agentloop]
name = "agentloop"
base_url = "BASE/v1"
wire_api = "responses"
supports_websockets = true
`)
	if d.KeyRequired {
		s += "env_key = \"AGENTLOOP_API_KEY\"   # the variable that holds the key\n"
	}
	return s + "\n# then: codex exec --skip-git-repo-check \"fix the failing test\""
}

func vercelSnippet(d Docs) string {
	return strings.NewReplacer("BASE", d.BaseURL, "KEY", keyLine(d)).Replace(`import { createOpenAI } from "@ai-sdk/openai"; // 4.x, with ai 7.x
import { streamText } from "ai";

const openai = createOpenAI({ baseURL: "BASE/v1", apiKey: "KEY" });
const result = streamText({ model: openai.responses("spark"), prompt: "Hello" });
for await (const text of result.textStream) process.stdout.write(text);`)
}
