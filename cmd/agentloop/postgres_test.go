package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"agentloop/store/postgres/pgtest"
)

// `serve --db postgres://…` and AGENTLOOP_DB=postgres://… both store in
// PostgreSQL: a response stored through one server reads back through the
// other.
func TestServeWithPostgres(t *testing.T) {
	dsn := pgtest.Database(t)
	byFlag, _, stopFlag := serve(t, nil, "--addr", "127.0.0.1:0", "--db", dsn)
	byEnv, _, stopEnv := serve(t, map[string]string{"AGENTLOOP_ADDR": "127.0.0.1:0", "AGENTLOOP_DB": dsn})

	resp, err := http.Post(byFlag+"/v1/responses", "application/json", strings.NewReader(`{"model":"burst","input":"hi","store":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID string }
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &created) != nil || created.ID == "" {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	resp, err = http.Get(byEnv + "/v1/responses/" + created.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(got) != string(body) {
		t.Errorf("GET through the other server = %d %s, want 200 and %s", resp.StatusCode, got, body)
	}
	for _, stop := range []func() error{stopFlag, stopEnv} {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}
}
