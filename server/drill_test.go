package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/server"
)

func TestDrillAPIArmsListsAndDisarms(t *testing.T) {
	h := newHarness(t)
	code, b := h.post("/api/drills", `{"drill":"evict-cache","after_turns":2,"times":3}`)
	if code != http.StatusCreated {
		t.Fatalf("arm: %d %s", code, b)
	}
	var dr api.Drill
	if err := json.Unmarshal(b, &dr); err != nil || dr.ID == "" || dr.Drill != "evict-cache" || dr.AfterTurns != 2 || dr.Times != 3 {
		t.Fatalf("armed %s", b)
	}
	var list server.DrillList
	getJSON(t, h.url+"/api/drills", &list)
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != dr.ID || list.Data[0].Firings == nil {
		t.Fatalf("list %+v", list)
	}
	req, _ := http.NewRequest(http.MethodDelete, h.url+"/api/drills/"+dr.ID, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("disarm: %v %v", err, resp.Status)
	}
	resp.Body.Close()
	resp, _ = http.DefaultClient.Do(req)
	if resp.StatusCode != 404 {
		t.Fatalf("disarm twice: %d", resp.StatusCode)
	}
	resp.Body.Close()
	getJSON(t, h.url+"/api/drills", &list)
	if len(list.Data) != 0 {
		t.Fatalf("still armed: %+v", list.Data)
	}
}

func TestDrillAPIBadInputNamesTheParameter(t *testing.T) {
	h := newHarness(t)
	for body, param := range map[string]string{
		`{"drill":"explode"}`:                     "drill",
		`{"after_turns":1}`:                       "drill",
		`{"drill":"stall","after_turns":"two"}`:   "after_turns",
		`{"drill":"stall","times":0.5}`:           "times",
		`{"drill":"stall","colour":"red"}`:        "colour",
		`{"drill":"evict-cache","duration_ms":5}`: "duration_ms",
		`{"drill":"stall"} {}`:                    "",
		``:                                        "",
	} {
		code, b := h.post("/api/drills", body)
		if code != 400 || decodeError(t, b).Param != param {
			t.Errorf("%s: %d %s, want a 400 naming %q", body, code, b, param)
		}
	}
	// JSON only, like every /api write.
	resp, err := http.Post(h.url+"/api/drills", "text/plain", strings.NewReader(`{"drill":"stall"}`))
	if err != nil || resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain: %v %v", err, resp.Status)
	}
	resp.Body.Close()
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func FuzzDecodeDrillSpec(f *testing.F) {
	for _, s := range []string{`{"drill":"evict-cache","after_turns":2,"times":1}`, `{"drill":"stall","duration_ms":50,"scope":"k"}`,
		`{"drill":"http-429"}`, `{"drill":"x"}`, `{}`, `[]`, `{"drill":"stall","times":-1}`, `{"drill":"stall"}{}`, ``} {
		f.Add([]byte(s))
	}
	d := server.NewDrills(nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		spec, err := server.DecodeDrillSpec(body)
		if err != nil {
			if err.Status != 400 || err.Message == "" {
				t.Fatalf("bad error %+v", err)
			}
			return
		}
		// An accepted spec is complete and arms as it is.
		again := spec
		if e := server.CheckDrill(&again); e != nil || again != spec || spec.Times < 1 {
			t.Fatalf("accepted %+v re-checks as %+v (%v)", spec, again, e)
		}
		dr, e := d.Arm(spec)
		if e != nil {
			return // the registry is full
		}
		d.Disarm(dr.ID)
	})
}
