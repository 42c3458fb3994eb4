package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendStringRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", "quote \" and \\ back", "ctl \x00\x01\x1f\n\r\t", "é 日本 🎉", "\u2028\u2029", "bad \xff utf8", "<script>&"} {
		var got string
		b := AppendString(nil, s)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("AppendString(%q) = %s: not JSON: %v", s, b, err)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if got != want {
			t.Errorf("round trip of %q = %q, want %q", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("hello")
	f.Add("a\"b\\c\x00\xff\u2028")
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendString(nil, s)
		if !utf8.Valid(b) {
			t.Fatalf("output not valid UTF-8: %q", b)
		}
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("not JSON: %s: %v", b, err)
		}
		if got != strings.ToValidUTF8(s, "\ufffd") && utf8.ValidString(s) {
			t.Fatalf("round trip %q != %q", got, s)
		}
	})
}

func TestDecodeInputShapes(t *testing.T) {
	body := `{"model":"m","input":[
	 {"role":"user","content":"hi"},
	 {"type":"message","role":"developer","content":[{"type":"input_text","text":"sys"}]},
	 {"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"yo","annotations":[]}]},
	 {"type":"function_call","id":"fc_1","name":"f","arguments":"{}","call_id":"call_1"},
	 {"type":"function_call_output","call_id":"call_1","output":"{\"ok\":true}"},
	 {"type":"item_reference","id":"msg_1"},
	 {"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}
	],"unknown_field":{"x":1}}`
	req, e := DecodeCreate([]byte(body))
	if e != nil {
		t.Fatal(e)
	}
	items, e := req.DecodeInput()
	if e != nil {
		t.Fatal(e)
	}
	wantTypes := []string{"message", "message", "message", "function_call", "function_call_output", "item_reference", "reasoning"}
	if len(items) != len(wantTypes) {
		t.Fatalf("got %d items", len(items))
	}
	for i, it := range items {
		if it.Type != wantTypes[i] {
			t.Errorf("item %d type %q, want %q", i, it.Type, wantTypes[i])
		}
	}
	if items[0].Text() != "hi" || items[0].Content[0].Type != "input_text" {
		t.Errorf("easy message not normalized: %+v", items[0])
	}
	if items[4].Text() != `{"ok":true}` {
		t.Errorf("output text = %q", items[4].Text())
	}
	if got := string(items[6].AppendJSON(nil)); !strings.Contains(got, "encrypted_content") {
		t.Errorf("reasoning not kept verbatim: %s", got)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct{ name, body, param, code string }{
		{"not json", `{"model":`, "", "invalid_json"},
		{"array body", `[1]`, "", "invalid_json"},
		{"bad utf8", "{\"model\":\"\xff\"}", "", "invalid_json"},
		{"wrong type", `{"model":5}`, "model", "invalid_type"},
		{"unknown item", `{"input":[{"type":"computer_call"}]}`, "input[0].type", "invalid_value"},
		{"bad role", `{"input":[{"role":"robot","content":"x"}]}`, "input[0].role", "invalid_value"},
		{"call without call_id", `{"input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id", "missing_required_parameter"},
		{"output object", `{"input":[{"type":"function_call_output","call_id":"c","output":{}}]}`, "input[0].output", "invalid_type"},
		{"input number", `{"input":5}`, "input", "invalid_type"},
		{"temperature below 0", `{"temperature":-1}`, "temperature", "decimal_below_min_value"},
		{"temperature above 2", `{"temperature":2.5}`, "temperature", "decimal_above_max_value"},
		{"top_p above 1", `{"top_p":5}`, "top_p", "decimal_above_max_value"},
		{"top_logprobs above 20", `{"top_logprobs":1000}`, "top_logprobs", "integer_above_max_value"},
		{"top_logprobs below 0", `{"top_logprobs":-1}`, "top_logprobs", "integer_below_min_value"},
		{"max_tool_calls below 1", `{"max_tool_calls":-5}`, "max_tool_calls", "integer_below_min_value"},
		{"deep nesting", `{"input":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, "", "invalid_json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, e := DecodeCreate([]byte(c.body))
			if e == nil {
				_, e = req.DecodeInput()
			}
			if e == nil {
				t.Fatal("no error")
			}
			if e.Status != 400 || e.Param != c.param || e.Code != c.code {
				t.Errorf("got status %d param %q code %q (%s), want 400 %q %q", e.Status, e.Param, e.Code, e.Message, c.param, c.code)
			}
		})
	}
}

func TestDecodeAcceptsTheRangesEnds(t *testing.T) {
	for _, body := range []string{`{"temperature":0}`, `{"temperature":2}`, `{"top_p":0}`, `{"top_p":1}`,
		`{"top_logprobs":0}`, `{"top_logprobs":20}`, `{"max_tool_calls":1}`} {
		if _, e := DecodeCreate([]byte(body)); e != nil {
			t.Errorf("%s: %v", body, e)
		}
	}
}

func FuzzDecodeCreate(f *testing.F) {
	f.Add([]byte(`{"model":"spark","input":"hi","stream":true}`))
	f.Add([]byte(`{"model":"spark","input":[{"type":"function_call_output","call_id":"c","output":"x"}],"tools":[{"type":"function","name":"f","parameters":{}}]}`))
	f.Add([]byte(`{"input":[{"role":"assistant","content":[{"type":"output_text","text":"a"},{"type":"input_image","image_url":"x"}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := DecodeCreate(body)
		if e != nil {
			if e.Status != 400 || e.Message == "" {
				t.Fatalf("bad error %+v", e)
			}
			return
		}
		items, e := req.DecodeInput()
		if e != nil {
			if e.Status != 400 {
				t.Fatalf("bad error %+v", e)
			}
			return
		}
		_, _ = req.DecodeTools()
		_ = req.ToolChoiceName()
		for i := range items {
			out := items[i].AppendJSON(nil)
			if !json.Valid(out) {
				t.Fatalf("item %d re-encodes to invalid JSON: %s", i, out)
			}
		}
	})
}

func TestEventsAreValidJSON(t *testing.T) {
	it := &Item{Type: TypeFunctionCall, ID: "fc_1", Status: "in_progress", CallID: "call_1", Name: "f"}
	evs := [][]byte{
		AppendResponseEvent(nil, EventCreated, 0, []byte(`{"id":"resp_1"}`)),
		AppendOutputItemEvent(nil, EventOutputItemAdded, 1, 0, it),
		AppendContentPartEvent(nil, EventContentPartAdded, 2, "msg_1", 0, 0, ""),
		AppendTextDelta(nil, 3, "msg_1", 0, 0, "Hel\"lo\n"),
		AppendTextDone(nil, 4, "msg_1", 0, 0, "Hello"),
		AppendArgumentsDelta(nil, 5, "fc_1", 1, `{"a":`),
		AppendArgumentsDone(nil, 6, "fc_1", 1, "f", `{"a":1}`),
		AppendStreamError(nil, 7, ServerError("boom")),
		AppendWSError(nil, PreviousResponseNotFound("resp_x"), ""),
		AppendHTTPError(nil, ResponseNotFound("resp_x")),
	}
	for i, b := range evs {
		ev, err := DecodeEvent(b)
		if err != nil {
			t.Fatalf("event %d invalid: %s: %v", i, b, err)
		}
		if i < 7 && ev.SequenceNumber != i {
			t.Errorf("event %d seq %d", i, ev.SequenceNumber)
		}
	}
	if ev, _ := DecodeEvent(evs[6]); ev.Name != "f" {
		t.Errorf("function_call_arguments.done without its name: %s", evs[6])
	}
	ev, _ := DecodeEvent(evs[8])
	if e := ev.AsError(); e == nil || e.Status != 400 || e.Code != "previous_response_not_found" {
		t.Errorf("nested error decoded as %+v", e)
	}
}

func BenchmarkAppendTextDelta(b *testing.B) {
	buf := make([]byte, 0, 256)
	for i := 0; b.Loop(); i++ {
		buf = AppendTextDelta(buf[:0], i, "msg_0123456789abcdef0123456789abcdef0123456789abcdef", 0, 0, " token")
	}
	b.SetBytes(int64(len(buf)))
}

func TestMarshalResponseSplicesLongInstructions(t *testing.T) {
	long := strings.Repeat("say \"hi\" <b>\n\t", longInstructions/8)
	req := &CreateRequest{Model: "spark", Instructions: &long}
	r := NewResponse("resp_1", 1, req)
	var got, want map[string]any
	if err := json.Unmarshal(MarshalResponse(r), &got); err != nil {
		t.Fatal(err)
	}
	std, _ := json.Marshal(r)
	json.Unmarshal(std, &want)
	if got["instructions"] != long || len(got) != len(want) || got["id"] != "resp_1" {
		t.Fatalf("spliced response differs from encoding/json's")
	}
	short := "be brief"
	r.Instructions = &short
	if b := MarshalResponse(r); !bytes.Equal(b, func() []byte { b, _ := json.Marshal(r); return b }()) {
		t.Fatal("short instructions go through encoding/json unchanged")
	}
}

// An HTTP error body carries OpenAI's fields only; its headers go out as
// HTTP headers. A WebSocket error frame keeps them: clients read them there.
func TestHTTPErrorBodyHoldsOnlyTheAPIsFields(t *testing.T) {
	e := Errorf(http.StatusTooManyRequests, "", "rate_limit_exceeded", "Slow down.")
	e.Headers = map[string]string{"Retry-After": "2", "x-ratelimit-remaining-requests": "0"}
	w := httptest.NewRecorder()
	if err := WriteHTTPError(w, e); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	for k := range body.Error {
		if k != "message" && k != "type" && k != "param" && k != "code" {
			t.Errorf("the HTTP error body carries %q: %s", k, w.Body.String())
		}
	}
	if w.Header().Get("Retry-After") != "2" {
		t.Errorf("Retry-After header: %q", w.Header().Get("Retry-After"))
	}
	var frame struct {
		Error struct {
			Headers map[string]string `json:"headers"`
		} `json:"error"`
	}
	if err := json.Unmarshal(AppendWSError(nil, e, ""), &frame); err != nil || frame.Error.Headers["Retry-After"] != "2" {
		t.Errorf("the WebSocket error frame keeps its headers: %+v %v", frame, err)
	}
}

// TextPrefix is the prefix of Text, whichever way a tool output was sent.
func TestTextPrefixIsTextsPrefix(t *testing.T) {
	long := strings.Repeat("wörd ", 100)
	for _, output := range []string{`"short"`, `"` + long + `"`, `"` + long + `\n\"quoted\""`, `[{"type":"input_text","text":"` + long + `"}]`, `"` + "\xff" + long + `"`} {
		it := Item{Type: TypeFunctionCallOutput, CallID: "c", Output: json.RawMessage(output)}
		text := it.Text()
		for _, n := range []int{0, 1, 3, 256, 10000} {
			if got, want := it.TextPrefix(n), text[:min(n, len(text))]; got != want {
				t.Errorf("TextPrefix(%d) of %.20q = %q, want %q", n, output, got, want)
			}
		}
	}
	msg := Item{Type: TypeMessage, Role: "user", Content: []Part{{Type: "input_text", Text: long}}}
	if got := msg.TextPrefix(7); got != long[:7] {
		t.Errorf("a message's TextPrefix(7) = %q", got)
	}
}

// Every engine span falls in one waterfall group, and the JSON a page gets
// carries it.
func TestSpanGroup(t *testing.T) {
	want := map[string]string{
		StageParse: GroupOverhead, StageValidate: GroupOverhead, StageResolve: GroupOverhead, StageLoad: GroupOverhead,
		StageRender: GroupOverhead, StageSafety: GroupOverhead, StageFinalize: GroupOverhead,
		StageStackClassify: GroupAPIStack, StageStackStateLoad: GroupAPIStack, StageStackConfigHop: GroupAPIStack,
		StageStackSprintHops: GroupAPIStack, StageStackBilling: GroupAPIStack,
		StageQueue: GroupQueuePrefill, StagePrefill: GroupQueuePrefill, StageGenerate: GroupDecode,
		SpanDrill: GroupRecovery, "no-such-stage": "",
	}
	for name, g := range want {
		if got := SpanGroup(name); got != g {
			t.Errorf("SpanGroup(%q) = %q, want %q", name, got, g)
		}
	}
	named := map[string]bool{}
	for _, g := range WaterfallGroups {
		named[g.Name] = true
	}
	for name, g := range want {
		if g != "" && !named[g] {
			t.Errorf("group %q of %s is not in WaterfallGroups", g, name)
		}
	}
	b, err := json.Marshal(Trace{Spans: []Span{{Name: StageStackClassify, DurationNS: 5}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"group":"api_stack"`) {
		t.Errorf("a span's JSON has no group: %s", b)
	}
	var back Trace
	if err := json.Unmarshal(b, &back); err != nil || back.Spans[0].DurationNS != 5 {
		t.Errorf("the span does not read back: %v %+v", err, back)
	}
}

// A span's hand-written JSON says what encoding/json would say of its
// fields, the group filled in: the same keys, values and omissions.
func TestSpanJSONIsItsFields(t *testing.T) {
	type fields Span // the same tags, without MarshalJSON
	for _, s := range []Span{
		{Name: StageParse, StartNS: 1, DurationNS: 2, Kind: Measured, Items: 3, Tokens: 4, Bytes: 5},
		{Name: StageStackClassify, StartNS: -7, DurationNS: 1 << 40, Kind: Modelled, Note: `hit "cache" <b> & é` + "\x00\xff", Segment: 2},
		{Name: "no-such-stage", Note: "\u2028"},
		{},
	} {
		got, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		f := fields(s)
		f.Group = SpanGroup(s.Name)
		want, _ := json.Marshal(f)
		var g, w map[string]any
		if json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil || !reflect.DeepEqual(g, w) {
			t.Errorf("span %+v:\n got %s\nwant %s", s, got, want)
		}
	}
}
