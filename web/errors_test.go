package web

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"agentloop/store"
)

func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                  true,
		"Application/JSON":                  true,
		"application/json; charset=utf-8":   true,
		" application/json ;charset=UTF-8":  true,
		"application/json;":                 true,
		"":                                  false,
		"text/plain":                        false,
		"text/plain; charset=utf-8":         false,
		"application/x-www-form-urlencoded": false,
		"multipart/form-data; boundary=x":   false,
		"application/jsonp":                 false,
		"application/json-seq":              false,
		"application/vnd.api+json":          false,
		"application/json, text/plain":      false,
	} {
		if got := IsJSON(ct); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}

// A store that is locked or unreachable is a 503 with Retry-After: the read
// may succeed soon. Other failures are a 500; a missing run a 404.
func TestStoreErrorMapsTheStoreSentinels(t *testing.T) {
	cases := []struct {
		err        error
		status     int
		retryAfter bool
	}{
		{fmt.Errorf("store: get run run_1: %w", store.ErrNotFound), http.StatusNotFound, false},
		{fmt.Errorf("store: get run run_1: %w", store.ErrBusy), http.StatusServiceUnavailable, true},
		{fmt.Errorf("store: get run run_1: %w", store.ErrUnavailable), http.StatusServiceUnavailable, true},
		{errors.New("store: get run run_1: disk I/O error"), http.StatusInternalServerError, false},
	}
	for _, c := range cases {
		e := storeError(c.err, "Run", "run_1")
		if e.Status != c.status || (e.Headers["Retry-After"] != "") != c.retryAfter || !strings.Contains(e.Message, "run_1") {
			t.Errorf("%v: got %d %q (Retry-After %q), want %d naming the run, Retry-After %v",
				c.err, e.Status, e.Message, e.Headers["Retry-After"], c.status, c.retryAfter)
		}
	}
}
