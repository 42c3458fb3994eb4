package app_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/app"

	"github.com/labstack/echo/v4"
)

// TestErrorHandler checks the one error path: every error a handler returns
// leaves as one shape, with one Content-Type, no-store and its own headers;
// unknown pages get the HTML page; nothing is written twice.
func TestErrorHandler(t *testing.T) {
	limited := api.Errorf(http.StatusTooManyRequests, "", "rate_limit_exceeded", "Slow down.")
	limited.Headers = map[string]string{"Retry-After": "1"}
	page := func(c echo.Context) error { return c.HTML(http.StatusNotFound, "<p>no page</p>") }
	cases := []struct {
		name, path string
		err        error
		committed  bool
		status     int
		ctype      string
		body       string
		retryAfter string
	}{
		{name: "api error", path: "/v1/responses", err: api.BadRequest("model", "invalid_value", "Bad model."),
			status: 400, ctype: "application/json", body: `{"error":{"message":"Bad model.","type":"invalid_request_error","param":"model","code":"invalid_value"}}`},
		{name: "wrapped api error", path: "/api/runs", err: errors.Join(errors.New("context"), api.ResponseNotFound("resp_1")),
			status: 404, ctype: "application/json", body: `"Response with id 'resp_1' not found."`},
		{name: "headers", path: "/v1/responses", err: limited, status: 429, ctype: "application/json", body: `"rate_limit_error"`, retryAfter: "1"},
		{name: "unknown page", path: "/no/such/page", err: echo.ErrNotFound, status: 404, ctype: "text/html", body: "<p>no page</p>"},
		{name: "unknown api path", path: "/v1/nope", err: echo.ErrNotFound, status: 404, ctype: "application/json", body: `"Not Found"`},
		{name: "echo error", path: "/v1/responses", err: echo.ErrMethodNotAllowed, status: 405, ctype: "application/json", body: `"invalid_request_error"`},
		{name: "anything else", path: "/v1/responses", err: errors.New("disk on fire"), status: 500, ctype: "application/json", body: `"server_error"`},
		{name: "committed", path: "/v1/responses", err: api.ServerError("late"), committed: true, status: 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := echo.New()
			rec := httptest.NewRecorder()
			c := e.NewContext(httptest.NewRequest(http.MethodGet, tc.path, nil), rec)
			if tc.committed {
				c.Response().WriteHeader(http.StatusOK)
			}
			app.ErrorHandler(nil, page)(tc.err, c)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.committed {
				if rec.Body.Len() != 0 {
					t.Errorf("wrote after commit: %s", rec.Body)
				}
				return
			}
			h := rec.Header()
			if !strings.HasPrefix(h.Get("Content-Type"), tc.ctype) || !strings.Contains(rec.Body.String(), tc.body) {
				t.Errorf("content type %q, body %s", h.Get("Content-Type"), rec.Body)
			}
			if tc.ctype == "application/json" && (h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "no-store") {
				t.Errorf("content type %q, cache %q", h.Get("Content-Type"), h.Get("Cache-Control"))
			}
			if got := h.Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
			}
		})
	}
}
