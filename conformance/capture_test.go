package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"agentloop/server/enginetest"

	"github.com/coder/websocket"
)

// The SDK types a capture is checked against, by their names in the openai
// npm package (tsImports, in tsc_test.go, says where each is declared;
// goTypes, in gotypes_test.go, gives openai-go's).
const (
	typeResponse    = "Response"             // a create's JSON body, a retrieve
	typeStreamEvent = "ResponseStreamEvent"  // an SSE event
	typeServerEvent = "ResponsesServerEvent" // a WebSocket mode message, error frames included
	typeOutputItem  = "ResponseOutputItem"   // each item of a Response's output
	typeItemList    = "ResponseItemList"     // a page of input_items
	typeErrorBody   = "ErrorBody"            // an HTTP error body: {"error": ErrorObject}
)

// The transports, as capture names say them.
const (
	transportJSON = "http-json"
	transportSSE  = "http-sse"
	transportWS   = "websocket"
)

// The tool and format the matrix's cases share.
const (
	weatherTool      = `{"type":"function","name":"get_weather","description":"Weather of a city","strict":true,"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}`
	citySchemaFormat = `{"format":{"type":"json_schema","name":"city","strict":true,"schema":{"type":"object","properties":{"name":{"type":"string"},"population":{"type":"integer"},"tags":{"type":"array","items":{"type":"string","enum":["port","capital"]}},"mayor":{"anyOf":[{"type":"string"},{"type":"null"}]}},"required":["name","population","tags","mayor"],"additionalProperties":false}}}`
)

// cases is the request matrix: each body (without "stream") runs over the
// three transports.
var cases = []struct{ name, fields string }{
	{"plain", `"input":"Say hello."`},
	{"instructions and a multi-part message", `"instructions":"Be brief.","input":[{"role":"user","content":[{"type":"input_text","text":"Hi"},{"type":"input_text","text":"there"}]}],"temperature":0.5,"top_p":0.9,"truncation":"auto","service_tier":"auto","metadata":{"k":"v"},"user":"u1"`},
	{"function tool", `"input":"What's the weather in Paris?","tools":[` + weatherTool + `],"tool_choice":"required","parallel_tool_calls":false`},
	{"function tool without parameters", `"input":"Ping.","tools":[{"type":"function","name":"ping"}],"tool_choice":{"type":"function","name":"ping"}`},
	{"function call output", `"input":[{"role":"user","content":"Weather?"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"call_1","output":"sunny"}],"tools":[` + weatherTool + `]`},
	{"compaction", `"input":[{"role":"developer","content":"Be brief."},{"role":"user","content":"Weather?"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"call_1","output":"` + strings.Repeat("sunny and mild, ", 40) + `"}],"tools":[` + weatherTool + `],"context_management":[{"type":"compaction","compact_threshold":100}]`},
	{"json_schema", `"input":"Name a city.","text":` + citySchemaFormat},
	{"json_object", `"input":"Answer in JSON: name a colour.","text":{"format":{"type":"json_object"}}`},
	{"custom tool", `"input":"Patch the greeting.","tools":[{"type":"custom","name":"apply_patch","description":"Apply a patch"}],"tool_choice":{"type":"custom","name":"apply_patch"}`},
	{"custom tool regex grammar", `"input":"Pick a colour.","tools":[{"type":"custom","name":"colour","format":{"type":"grammar","syntax":"regex","definition":"(red|green|blue)"}}],"tool_choice":{"type":"custom","name":"colour"}`},
	{"custom tool lark grammar", `"input":"Add two numbers.","tools":[{"type":"custom","name":"sum","format":{"type":"grammar","syntax":"lark","definition":"start: NUMBER \"+\" NUMBER\nNUMBER: /[0-9]+/"}}],"tool_choice":{"type":"custom","name":"sum"}`},
	{"custom tool output", `"input":[{"role":"user","content":"Patch the greeting."},{"type":"custom_tool_call","call_id":"call_1","name":"apply_patch","input":"*** Begin Patch"},{"type":"custom_tool_call_output","call_id":"call_1","output":"Done."}],"tools":[{"type":"custom","name":"apply_patch"}]`},
	{"incomplete", `"input":"Write a long story.","max_output_tokens":3,"store":false`},
	{"reasoning", `"input":"Think, then answer.","reasoning":{"effort":"low","summary":"auto"},"include":["reasoning.encrypted_content"],"store":false`},
	{"reasoning without a summary", `"input":"What's the weather in Paris?","tools":[` + weatherTool + `],"tool_choice":"required","reasoning":{"effort":"minimal"}`},
}

// refusals are creates the engine answers with a 400, over HTTP as the
// error body and over WebSocket mode as an error frame.
var refusals = []struct{ name, fields string }{
	{"unknown parameter", `"input":"hi","temprature":1`},
	{"invalid enum", `"input":"hi","truncation":"sometimes"`},
	{"unknown forced function", `"input":"hi","tools":[` + weatherTool + `],"tool_choice":{"type":"function","name":"nope"}`},
	{"strict schema without additionalProperties", `"input":"hi","text":{"format":{"type":"json_schema","name":"r","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}`},
}

// capture is one JSON value the engine sent, with the SDK type it must be.
type capture struct {
	name string // case / transport / what
	typ  string
	json []byte
}

// captureAll runs the matrix against an engine started in-process and
// returns every capture.
func captureAll(t *testing.T) []capture {
	t.Helper()
	es := enginetest.Start(t, func(c *enginetest.Config) { c.Unmodelled = true })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := &recorder{t: t, url: es.URL, ctx: ctx}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(es.URL, "http")+"/v1/responses", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 24)
	for i, c := range cases {
		body := fmt.Sprintf(`{"model":"spark","metadata":{"agentloop_seed":"%d"},%s}`, i+1, c.fields)
		if strings.Contains(c.fields, `"metadata"`) {
			body = `{"model":"spark",` + c.fields + `}`
		}
		r.httpJSON(c.name, body, 200)
		r.httpSSE(c.name, body)
		r.websocket(ws, c.name, body)
	}
	for _, c := range refusals {
		body := `{"model":"spark",` + c.fields + `}`
		r.httpJSON(c.name, body, 400)
		r.httpJSON(c.name+" (streamed)", body[:len(body)-1]+`,"stream":true}`, 400)
		r.websocket(ws, c.name, body)
	}
	r.websocket(ws, "not JSON", `{"type":"response.create",`)
	r.get("missing response", "/v1/responses/resp_missing", typeErrorBody, 404)
	return r.out
}

// recorder sends the matrix's requests and keeps what comes back.
type recorder struct {
	t   *testing.T
	url string
	ctx context.Context
	out []capture
}

func (r *recorder) add(name, typ string, b []byte) {
	r.out = append(r.out, capture{name: name, typ: typ, json: bytes.TrimSpace(b)})
}

func (r *recorder) do(method, path, body string) (int, []byte, http.Header) {
	r.t.Helper()
	req, err := http.NewRequestWithContext(r.ctx, method, r.url+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// httpJSON posts a create and keeps its Response (and each output item,
// the stored response retrieved, its input items) or its error body.
func (r *recorder) httpJSON(name, body string, want int) {
	r.t.Helper()
	status, b, _ := r.do("POST", "/v1/responses", body)
	if status != want {
		r.t.Fatalf("%s over %s: status %d, want %d: %s", name, transportJSON, status, want, b)
	}
	at := name + " / " + transportJSON
	if status != 200 {
		r.add(at+" / error", typeErrorBody, b)
		return
	}
	r.add(at+" / response", typeResponse, b)
	var resp struct {
		ID     string            `json:"id"`
		Output []json.RawMessage `json:"output"`
		Store  bool              `json:"store"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		r.t.Fatalf("%s: %v: %s", at, err, b)
	}
	for i, it := range resp.Output {
		r.add(fmt.Sprintf("%s / output[%d]", at, i), typeOutputItem, it)
	}
	if resp.Store {
		r.get(at+" / retrieve", "/v1/responses/"+resp.ID, typeResponse, 200)
		r.get(at+" / input_items", "/v1/responses/"+resp.ID+"/input_items", typeItemList, 200)
	}
}

func (r *recorder) get(name, path, typ string, want int) {
	r.t.Helper()
	status, b, _ := r.do("GET", path, "")
	if status != want {
		r.t.Fatalf("%s: GET %s: status %d, want %d: %s", name, path, status, want, b)
	}
	r.add(name, typ, b)
}

// httpSSE posts a streamed create and keeps every event.
func (r *recorder) httpSSE(name, body string) {
	r.t.Helper()
	status, b, hdr := r.do("POST", "/v1/responses", body[:len(body)-1]+`,"stream":true}`)
	if status != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
		r.t.Fatalf("%s over %s: status %d (%s): %s", name, transportSSE, status, hdr.Get("Content-Type"), b)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	n := 0
	for sc.Scan() {
		if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
			r.add(fmt.Sprintf("%s / %s / event %d", name, transportSSE, n), typeStreamEvent, append([]byte(nil), data...))
			n++
		}
	}
	if n == 0 {
		r.t.Fatalf("%s over %s: no events: %s", name, transportSSE, b)
	}
}

// websocket sends a create (body without its "type", or a raw message)
// and keeps every message up to the response's last event or an error.
func (r *recorder) websocket(c *websocket.Conn, name, body string) {
	r.t.Helper()
	msg := body
	if !strings.Contains(body, `"type":"response.create"`) {
		msg = `{"type":"response.create",` + body[1:]
	}
	if err := c.Write(r.ctx, websocket.MessageText, []byte(msg)); err != nil {
		r.t.Fatal(err)
	}
	for n := 0; ; n++ {
		_, b, err := c.Read(r.ctx)
		if err != nil {
			r.t.Fatalf("%s over %s: %v", name, transportWS, err)
		}
		r.add(fmt.Sprintf("%s / %s / message %d", name, transportWS, n), typeServerEvent, b)
		var ev struct{ Type string }
		if err := json.Unmarshal(b, &ev); err != nil {
			r.t.Fatalf("%s over %s: %v: %s", name, transportWS, err, b)
		}
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed", "error":
			return
		}
	}
}
