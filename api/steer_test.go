package api

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeSteerTakesUserMessagesOnly(t *testing.T) {
	req, fail := DecodeSteer([]byte(`{"type":"response.steer","previous_response_id":"resp_1","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Stop."}]},{"role":"user","content":"Then go."}]}`))
	if fail != nil || req.PreviousResponseID != "resp_1" || len(req.Items) != 2 || req.Items[1].Text() != "Then go." {
		t.Fatalf("got %+v %+v", req, fail)
	}
	for body, want := range map[string]string{
		`{"type":"response.steer","previous_response_id":"resp_1"}`:                                                                      "Missing required parameter: 'input'",
		`{"type":"response.steer","input":"x"}`:                                                                                          "'previous_response_id'",
		`{"type":"response.steer","previous_response_id":7,"input":"x"}`:                                                                 "'previous_response_id'",
		`{"type":"response.steer","previous_response_id":"resp_1","input":""}`:                                                           "non-empty",
		`{"type":"response.steer","previous_response_id":"resp_1","input":[]}`:                                                           "non-empty",
		`{"type":"response.steer","previous_response_id":"resp_1","input":[{"role":"system","content":"x"}]}`:                            "'user' role",
		`{"type":"response.steer","previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"c","output":"x"}]}`: "'user' role",
		`{"type":"response.steer","previous_response_id":"resp_1","input":[{"role":"user","content":"x","name":"n"}]}`:                   "'type', 'role' and 'content' only",
		`{"type":"response.steer","previous_response_id":"resp_1","input":"x","model":"spark"}`:                                          "Unknown parameter: 'model'",
	} {
		_, fail := DecodeSteer([]byte(body))
		if fail == nil || fail.Code != SteerInvalidInput || !strings.Contains(fail.Message, want) {
			t.Errorf("%s: got %+v, want invalid_input saying %q", body, fail, want)
		}
	}
}

// FuzzDecodeSteer: any frame decodes to a request or an invalid_input
// failure, and the failure event it gives is one JSON object.
func FuzzDecodeSteer(f *testing.F) {
	for _, s := range []string{`{"type":"response.steer","previous_response_id":"resp_1","input":"Stop."}`,
		`{"type":"response.steer","previous_response_id":"resp_1","input":[{"role":"user","content":[{"type":"input_text","text":"x"}]}]}`,
		`{"type":"response.steer"}`, `[]`, `{"type":"response.steer","previous_response_id":"r","input":[{"role":"user","content":[{"type":"output_text","text":"x"}]}]}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, fail := DecodeSteer(body)
		if req == nil {
			t.Fatal("nil request")
		}
		if fail != nil {
			if fail.Code != SteerInvalidInput || fail.Message == "" {
				t.Fatalf("failure %+v", fail)
			}
		} else if req.PreviousResponseID == "" || len(req.Items) == 0 {
			t.Fatalf("accepted %+v", req)
		}
		ev := AppendSteerFailed(nil, 0, SteerRef{PreviousResponseID: req.PreviousResponseID}, req.Input, &SteerFailure{Code: "c", Message: "m"})
		if !json.Valid(ev) {
			t.Fatalf("failure event is not JSON: %s", ev)
		}
		ok := AppendSteerAccepted(nil, 1, SteerRef{ID: "steer_1", PreviousResponseID: req.PreviousResponseID})
		if !json.Valid(ok) {
			t.Fatalf("accepted event is not JSON: %s", ok)
		}
	})
}

func TestIsSteerReadsTheType(t *testing.T) {
	for body, want := range map[string]bool{
		`{"type":"response.steer","previous_response_id":"r","input":"x"}`:        true,
		`{"input":"x","previous_response_id":"r","type":"response.steer"}`:        true,
		` {"input":"x", "type" : "response.steer"} `:                              true,
		`{"type":"response.create","input":"say \"response.steer\""}`:             false,
		`{"input":"say \"response.steer\"","type":"response.create"}`:             false,
		`{"input":"say \"response.steer\"","model":"m","type":"response.create"}`: false,
		`{"input":[{"type":"response.steer"}],"type":"response.create","x":1}`:    false,
		`not json "response.steer"`:                                               false,
	} {
		if got := IsSteer([]byte(body)); got != want {
			t.Errorf("%s: %v, want %v", body, got, want)
		}
	}
}

// BenchmarkIsSteer is the reader's look at a 1 MB create: named first or
// last (the SDKs, rollout's sorted keys) it is not searched.
func BenchmarkIsSteer(b *testing.B) {
	items := strings.Repeat(`{"role":"user","content":"the quick brown fox \"jumps\" over the lazy dog"},`, 14000)
	for name, body := range map[string]string{
		"type_last":   `{"input":[` + items + `{"role":"user","content":"x"}],"model":"spark","type":"response.create"}`,
		"type_middle": `{"input":[` + items + `{"role":"user","content":"x"}],"type":"response.create","model":"spark"}`,
	} {
		frame := []byte(body)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				IsSteer(frame)
			}
		})
	}
}
