package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/seal"
	"agentloop/store/postgres/pgtest"
)

const reasoningWeather = `[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`

// reasoningTurn asks url for a first turn that reasons and calls a tool,
// with encrypted_content, store:false (Codex's shape), and returns the next
// turn's input: the first turn's items, its output and the tool's output.
func reasoningTurn(t *testing.T, url string) []json.RawMessage {
	t.Helper()
	user := json.RawMessage(`{"role":"user","content":"What's the weather in Paris?"}`)
	status, body := postCreate(t, url, map[string]any{"model": "instant", "input": []json.RawMessage{user}, "tools": json.RawMessage(reasoningWeather),
		"tool_choice": "required", "reasoning": map[string]string{"effort": "low"}, "include": []string{api.IncludeReasoningEncryptedContent}, "store": false})
	var resp api.Response
	if status != http.StatusOK || json.Unmarshal(body, &resp) != nil {
		t.Fatalf("first turn: %d %s", status, body)
	}
	input := []json.RawMessage{user}
	var callID string
	for _, it := range resp.Output {
		input = append(input, it.AppendJSON(nil))
		if it.Type == api.TypeFunctionCall {
			callID = it.CallID
		}
	}
	if len(resp.Output) < 2 || resp.Output[0].Type != api.TypeReasoning || resp.Output[0].EncryptedContent == "" || callID == "" {
		t.Fatalf("first turn's output is not a sealed reasoning item and a call: %s", body)
	}
	out, _ := json.Marshal(map[string]string{"type": "function_call_output", "call_id": callID, "output": "18°C"})
	return append(input, out)
}

// postCreate posts a create body and returns the status and the body.
func postCreate(t *testing.T, url string, req map[string]any) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(req)
	resp, err := http.Post(url+"/v1/responses", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// replay sends input (which carries a sealed reasoning item) as the next
// turn and returns the status and the error code, if any.
func replay(t *testing.T, url string, input []json.RawMessage) (int, string) {
	t.Helper()
	status, body := postCreate(t, url, map[string]any{"model": "instant", "input": input, "tools": json.RawMessage(reasoningWeather),
		"reasoning": map[string]string{"effort": "low"}, "include": []string{api.IncludeReasoningEncryptedContent}, "store": false})
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(body, &e)
	return status, e.Error.Code
}

// The seal key is made once and kept in the store: a reasoning blob made
// before a restart opens after it; a server with another store (another
// key) answers the hosted API's 400; --seal-key given that store's key
// opens it again.
func TestSealKeyOutlivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentloop.db")
	first := apptest.Start(t, apptest.DB(path))
	input := reasoningTurn(t, first.URL())
	kept, err := first.DB.SealKey(context.Background(), make([]byte, seal.KeyLen))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	restarted := apptest.Start(t, apptest.DB(path))
	if status, code := replay(t, restarted.URL(), input); status != http.StatusOK {
		t.Fatalf("after a restart on the same store: %d %s, want 200", status, code)
	}
	foreign := apptest.Start(t)
	if status, code := replay(t, foreign.URL(), input); status != http.StatusBadRequest || code != api.CodeInvalidEncryptedContent {
		t.Fatalf("on a server with another key: %d %q, want 400 %s", status, code, api.CodeInvalidEncryptedContent)
	}
	var k seal.Key
	copy(k[:], kept)
	given := apptest.Start(t, func(c *app.Config) { c.SealKey = k.String() })
	if status, code := replay(t, given.URL(), input); status != http.StatusOK {
		t.Fatalf("with --seal-key the first store's key: %d %s, want 200", status, code)
	}
}

func TestSealKeyFlagMustBeAKey(t *testing.T) {
	cfg := app.Defaults()
	cfg.Addr, cfg.DB, cfg.SealKey = "127.0.0.1:0", filepath.Join(t.TempDir(), "a.db"), "not a key"
	if a, err := app.New(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "--seal-key") {
		if a != nil {
			a.Shutdown(context.Background())
		}
		t.Fatalf("app.New with --seal-key %q = %v, want an error naming --seal-key", cfg.SealKey, err)
	}
}

// Replicas sharing a PostgreSQL store share its seal key: a reasoning blob
// one made opens on the other.
func TestSealKeySharedByReplicas(t *testing.T) {
	dsn := pgtest.Database(t)
	a := apptest.Start(t, apptest.DB(dsn))
	replica := apptest.Start(t, apptest.DB(dsn))
	input := reasoningTurn(t, a.URL())
	if status, code := replay(t, replica.URL(), input); status != http.StatusOK {
		t.Fatalf("a blob made on one replica, sent to the other: %d %s, want 200", status, code)
	}
}
