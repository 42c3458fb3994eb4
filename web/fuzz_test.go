package web

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeRunRequest: POST /api/runs bodies come from anyone. Decoding
// never panics, errors are 400-class with a message, and an accepted body
// decodes to a config that survives a round trip.
func FuzzDecodeRunRequest(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"scenario":"fix-failing-test","profile":"burst","rtt_ms":0,"tool_time_ms":0,"lanes":["http","ws"],"seed":1,"sequential":false,"repeats":1}`,
		`{"scenario":"quick-fix","profile":"burst","take_turns":true,"sequential":false}`,
		`{"rtt_ms":"20"}`,
		`{"lanes":[1,2]}`,
		`{"x":1}`,
		`[]`,
		`{"seed":1e400}`,
		`{} trailing`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		cfg, err := decodeRunRequest(body)
		if err != nil {
			if err.Status < 400 || err.Status >= 500 || err.Message == "" {
				t.Fatalf("bad error %+v", err)
			}
			return
		}
		b, merr := json.Marshal(cfg)
		if merr != nil {
			t.Fatal(merr)
		}
		again, err := decodeRunRequest(b)
		if err != nil {
			t.Fatalf("re-encoded config refused: %s: %v", b, err)
		}
		if !reflect.DeepEqual(cfg, again) {
			t.Fatalf("round trip changed the config: %+v vs %+v", cfg, again)
		}
	})
}
