package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/internal/wait"
	"agentloop/store/postgres/pgtest"

	"github.com/coder/websocket"
)

// The app's tests that need PostgreSQL share one throwaway cluster.
func TestMain(m *testing.M) { pgtest.Main(m) }

// With --db a postgres:// URL the app stores in PostgreSQL: a store:true
// response reads back from another app on the same database, as from a
// replica; once the database is unreachable a read is a 503 in the OpenAI
// error shape, with Retry-After.
func TestPostgresStoreEndToEnd(t *testing.T) {
	dsn := pgtest.Database(t)
	a := apptest.Start(t, apptest.DB(dsn))
	replica := apptest.Start(t, apptest.DB(dsn))

	resp, err := http.Post(a.URL()+"/v1/responses", "application/json",
		strings.NewReader(`{"model":"burst","input":"hi","store":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &created) != nil || created.ID == "" || created.Status != "completed" {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}

	for name, url := range map[string]string{"same app": a.URL(), "replica": replica.URL()} {
		resp, err := http.Get(url + "/v1/responses/" + created.ID)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(got) != string(body) {
			t.Errorf("%s: GET %s = %d %s, want 200 and the created response %s", name, created.ID, resp.StatusCode, got, body)
		}
	}

	cut(t, dsn, a, replica)
	resp, err = http.Get(a.URL() + "/v1/responses/" + created.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(got, &e) != nil || e.Error.Type != "server_error" ||
		!strings.Contains(e.Error.Message, "cannot be reached") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("GET with the database unreachable = %d %s (Retry-After %q), want a 503 server_error saying the database cannot be reached, with Retry-After",
			resp.StatusCode, got, resp.Header.Get("Retry-After"))
	}
}

// cut makes the database at dsn unreachable once every usage row the apps
// have queued is durable: a row still queued when the database goes would
// be lost at shutdown, which Shutdown rightly reports as an error.
func cut(t *testing.T, dsn string, apps ...*app.App) {
	t.Helper()
	for _, a := range apps {
		if err := a.DB.FlushLedger(context.Background()); err != nil {
			t.Fatalf("flush the usage ledger before cutting the database: %v", err)
		}
	}
	pgtest.Cut(t, dsn)
}

// Replicas on one PostgreSQL: a trace recorded by one is served by the
// other, each says which replica served it, and readiness follows the
// store.
func TestReplicasShareTracesAndReadiness(t *testing.T) {
	dsn := pgtest.Database(t)
	a := apptest.Start(t, apptest.DB(dsn), func(c *app.Config) { c.ReplicaID = "replica-a" })
	b := apptest.Start(t, apptest.DB(dsn), func(c *app.Config) { c.ReplicaID = "replica-b" })

	resp, err := http.Post(a.URL()+"/v1/responses", "application/json",
		strings.NewReader(`{"model":"instant","input":"hi","store":false}`))
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if created.ID == "" {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	// The trace reaches the store within the group-commit window; wait for
	// that state, not for a time.
	var tr api.Trace
	wait.UntilErr(t, "replica b to serve the trace of "+created.ID, func() error {
		resp, err := http.Get(b.URL() + "/api/traces/" + created.ID)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return json.NewDecoder(resp.Body).Decode(&tr)
	})
	if tr.ResponseID != created.ID || tr.Replica != "replica-a" || len(tr.Spans) == 0 {
		t.Errorf("trace from the other replica: %+v, want %s served by replica-a with its spans", tr, created.ID)
	}

	ready := func(url string) int {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if ready(a.URL()) != 200 || ready(b.URL()) != 200 {
		t.Fatal("replicas on a live store are not ready")
	}
	cut(t, dsn, a, b)
	if code := ready(b.URL()); code != http.StatusServiceUnavailable {
		t.Errorf("readiness with the store cut off: %d, want 503", code)
	}
}

// A WebSocket continuation that lands on another replica hydrates its
// parent from the shared store when the parent was stored, and gets
// previous_response_not_found when it was store:false, as in the field;
// the trace's load span says which happened.
func TestWebSocketContinuationOnAnotherReplica(t *testing.T) {
	dsn := pgtest.Database(t)
	a := apptest.Start(t, apptest.DB(dsn), func(c *app.Config) { c.ReplicaID = "replica-a" })
	b := apptest.Start(t, apptest.DB(dsn), func(c *app.Config) { c.ReplicaID = "replica-b" })
	create := func(store bool) string {
		t.Helper()
		resp, err := http.Post(a.URL()+"/v1/responses", "application/json",
			strings.NewReader(`{"model":"instant","input":"Remember this.","store":`+strconv.FormatBool(store)+`}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct{ ID string }
		if json.NewDecoder(resp.Body).Decode(&r) != nil || r.ID == "" {
			t.Fatalf("create on replica a: %d", resp.StatusCode)
		}
		return r.ID
	}
	stored, unstored := create(true), create(false)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, strings.Replace(b.URL(), "http", "ws", 1)+"/v1/responses", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	// last sends a continuation and returns the final frame's type, code
	// and response id.
	last := func(parent string) (typ, code, id string) {
		t.Helper()
		msg := `{"type":"response.create","model":"instant","store":false,"previous_response_id":"` + parent + `","input":"And now?"}`
		if err := conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ev struct {
				Type     string
				Response struct{ ID string }
				Error    struct{ Code string }
			}
			json.Unmarshal(b, &ev)
			if ev.Response.ID != "" {
				id = ev.Response.ID
			}
			switch ev.Type {
			case "response.completed", "response.failed", "error":
				return ev.Type, ev.Error.Code, id
			}
		}
	}
	typ, _, id := last(stored)
	if typ != "response.completed" {
		t.Fatalf("continuing a stored parent on another replica: %s", typ)
	}
	tr, ok := b.Shared.Traces.Get(id)
	load, _ := tr.Span("load")
	if !ok || tr.Replica != "replica-b" || !strings.Contains(load.Note, "store") {
		t.Errorf("the hydration's trace: replica %q, load span %+v; want replica-b loading from the store", tr.Replica, load)
	}
	if typ, code, _ := last(unstored); typ != "error" || code != "previous_response_not_found" {
		t.Errorf("continuing a store:false parent on another replica: %s %s, want previous_response_not_found", typ, code)
	}
}
