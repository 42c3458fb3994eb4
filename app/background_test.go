package app_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/internal/wait"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// TestBodilessPostUnderV1: the SDKs' cancel() sends a POST with no body
// and no Content-Type; the guard lets it through to the engine when it is
// same-origin or carries a bearer token, and keeps every other refusal.
func TestBodilessPostUnderV1(t *testing.T) {
	a := apptest.Start(t)
	u := a.URL()
	for _, tc := range []struct {
		name, method, path, body, ct string
		header                       map[string]string
		status                       int
		code                         string
	}{
		// Through to the engine: the unknown response's 404.
		{"bodiless, no Sec-Fetch", "POST", "/v1/responses/resp_x/cancel", "", "", nil, 404, ""},
		{"bodiless, same-origin", "POST", "/v1/responses/resp_x/cancel", "", "", map[string]string{"Sec-Fetch-Site": "same-origin"}, 404, ""},
		{"bodiless, cross-site with a bearer", "POST", "/baseline/v1/responses/resp_x/cancel", "", "",
			map[string]string{"Sec-Fetch-Site": "cross-site", "Authorization": "Bearer sk"}, 404, ""},
		// Still refused.
		{"bodiless, cross-site", "POST", "/v1/responses/resp_x/cancel", "", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "cross_site_request"},
		{"bodiless, same-site", "POST", "/v1/responses/resp_x/cancel", "", "", map[string]string{"Sec-Fetch-Site": "same-site"}, 403, "cross_site_request"},
		{"bodiless outside the engines", "POST", "/api/runs", "", "", nil, 415, "unsupported_media_type"},
		{"a body without a type", "POST", "/v1/responses/resp_x/cancel", "{}", "", nil, 415, "unsupported_media_type"},
		{"empty text/plain", "POST", "/v1/responses/resp_x/cancel", "", "text/plain", nil, 415, "unsupported_media_type"},
	} {
		h := map[string]string{}
		for k, v := range tc.header {
			h[k] = v
		}
		if tc.ct != "" {
			h["Content-Type"] = tc.ct
		}
		resp, body := do(t, tc.method, u+tc.path, tc.body, h)
		if resp.StatusCode != tc.status || errorCode(t, body) != tc.code {
			t.Errorf("%s: %d %.200s, want %d %q", tc.name, resp.StatusCode, body, tc.status, tc.code)
		}
	}
}

// TestBackgroundFailsAcrossRestart: a background response in flight when
// its replica stops is failed by the restart, whole: a poll reads a
// failed response with its error and no partial output, and its resumed
// stream ends with response.failed.
func TestBackgroundFailsAcrossRestart(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "app.db")
	replica := func(c *app.Config) { c.ReplicaID = "replica-1" }
	_, id := startInFlight(t, dbPath, replica)

	// The same replica starts again over the same store, as after a crash.
	restarted := apptest.Start(t, apptest.DB(dbPath), replica)
	client := openai.NewClient(option.WithBaseURL(restarted.URL()+"/v1/"), option.WithAPIKey("sk"), option.WithMaxRetries(0))
	got, err := client.Responses.Get(t.Context(), id, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "failed" || got.Error.Code != "server_error" || got.Error.Message == "" || len(got.Output) != 0 || !got.Background {
		t.Fatalf("after the restart: status %s, error %+v, %d output items", got.Status, got.Error, len(got.Output))
	}
	var whole map[string]json.RawMessage
	if err := json.Unmarshal([]byte(got.RawJSON()), &whole); err != nil || len(whole) < 20 {
		t.Fatalf("the failed snapshot is not a whole response: %s", got.RawJSON())
	}
	s := client.Responses.GetStreaming(t.Context(), id, responses.ResponseGetParams{})
	var last responses.ResponseStreamEventUnion
	for s.Next() {
		last = s.Current()
	}
	if s.Err() != nil || last.Type != "response.failed" || last.Response.Status != "failed" {
		t.Fatalf("resumed stream ended with %q (%v)", last.Type, s.Err())
	}
	if c, err := client.Responses.Cancel(t.Context(), id); err != nil || c.Status != "failed" {
		t.Errorf("cancel after the restart: %+v, %v", c, err)
	}
}

// TestShutdownEndsBackgroundResponses: a graceful shutdown ends a running
// background response as it ends any stream, before the store closes:
// after the restart it reads failed by the shutdown, not by the restart.
func TestShutdownEndsBackgroundResponses(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "app.db")
	replica := func(c *app.Config) { c.ReplicaID = "replica-1" }
	first, id := startInFlight(t, dbPath, replica)
	if err := first.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	restarted := apptest.Start(t, apptest.DB(dbPath), replica)
	client := openai.NewClient(option.WithBaseURL(restarted.URL()+"/v1/"), option.WithAPIKey("sk"), option.WithMaxRetries(0))
	got, err := client.Responses.Get(t.Context(), id, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "failed" || !strings.Contains(got.Error.Message, "shutting down") {
		t.Fatalf("after a graceful shutdown: %s, %+v", got.Status, got.Error)
	}
}

// startInFlight starts the app over dbPath and a background response on
// it that runs for minutes, and returns once it is in flight.
func startInFlight(t *testing.T, dbPath string, opts ...func(*app.Config)) (*app.App, string) {
	t.Helper()
	a := apptest.Start(t, append([]func(*app.Config){apptest.DB(dbPath)}, opts...)...)
	client := openai.NewClient(option.WithBaseURL(a.URL()+"/v1/"), option.WithAPIKey("sk"), option.WithMaxRetries(0))
	r, err := client.Responses.New(t.Context(), responses.ResponseNewParams{Model: "custom-5", Background: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("a long story")}, MaxOutputTokens: openai.Int(300)},
		option.WithJSONSet("ignore_eos", true))
	if err != nil {
		t.Fatal(err)
	}
	wait.UntilErr(t, "the response in flight", func() error {
		got, err := client.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{})
		if err == nil && got.Status != "in_progress" {
			err = fmt.Errorf("status %s", got.Status)
		}
		return err
	})
	return a, r.ID
}
