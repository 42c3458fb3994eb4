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

// Every route that calls the store follows api.StoreError's rule with its
// own verb: a full disk is a 503 saying so (no Retry-After: it will not
// pass by itself), a locked database a 503 with Retry-After, and the page
// routes answer the same on their HTML pages.
func TestStoreFailuresOnEveryRoute(t *testing.T) {
	type want struct {
		status     int
		says       string
		retryAfter bool
	}
	full := want{http.StatusServiceUnavailable, "the disk is full", false}
	busy := want{http.StatusServiceUnavailable, "the database is locked", true}
	cases := []struct {
		name     string
		method   string
		path     string
		body     string
		startErr error
		failWith error
		delErr   error
		want     want
		verb     string
	}{
		{name: "start on a full disk", method: "POST", path: "/api/runs", body: `{}`, startErr: fmt.Errorf("store: create run: %w", store.ErrFull), want: full, verb: "could not be stored"},
		{name: "start on a locked store", method: "POST", path: "/api/runs", body: `{}`, startErr: store.ErrBusy, want: busy, verb: "could not be stored"},
		{name: "delete", method: "DELETE", path: "/api/runs/run_done", delErr: store.ErrFull, want: full, verb: "could not be deleted"},
		{name: "list", method: "GET", path: "/api/runs", failWith: store.ErrBusy, want: busy, verb: "could not be read"},
		{name: "get", method: "GET", path: "/api/runs/run_done", failWith: store.ErrBusy, want: busy, verb: "could not be read"},
		{name: "cancel", method: "POST", path: "/api/runs/run_done/cancel", body: `{}`, failWith: store.ErrFull, want: full, verb: "could not be read"},
		{name: "runs page", method: "GET", path: "/runs", failWith: store.ErrBusy, want: busy, verb: "could not be read"},
		{name: "run page", method: "GET", path: "/runs/run_done", failWith: store.ErrFull, want: full, verb: "could not be read"},
		{name: "race page", method: "GET", path: "/race?run=run_done", failWith: store.ErrFull, want: full, verb: "could not be read"},
		{name: "sweep page", method: "GET", path: "/sweep", failWith: store.ErrBusy, want: busy, verb: "could not be read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTestPlayground(t)
			tp.races.startErr = tc.startErr
			tp.runs.failWith, tp.runs.deleteErr = tc.failWith, tc.delErr
			header := map[string]string{"Content-Type": "application/json", HeaderCancelToken: tp.pg.cancels.token("run_done")}
			rec := tp.do(tc.method, tc.path, tc.body, header)
			body := rec.Body.String()
			if rec.Code != tc.want.status || !strings.Contains(body, tc.want.says) || !strings.Contains(body, tc.verb) {
				t.Errorf("%d %s, want %d saying %q and %q", rec.Code, body, tc.want.status, tc.want.says, tc.verb)
			}
			if got := rec.Header().Get("Retry-After") != ""; got != tc.want.retryAfter {
				t.Errorf("Retry-After %q, want set %v", rec.Header().Get("Retry-After"), tc.want.retryAfter)
			}
		})
	}
}
