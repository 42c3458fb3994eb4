package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/store"
)

// Every route maps a failed store call by one rule: a store failure is a
// 503 saying why, with Retry-After only when the same call may succeed
// soon; anything else is a 500 that hides its cause.
func TestStoreErrorIsOneRule(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("store: get response resp_1: %w", err) }
	cases := []struct {
		err    error
		status int
		retry  bool
		says   string
	}{
		{wrap(store.ErrBusy), http.StatusServiceUnavailable, true, "locked"},
		{wrap(store.ErrUnavailable), http.StatusServiceUnavailable, true, "cannot be reached"},
		{wrap(context.DeadlineExceeded), http.StatusServiceUnavailable, true, "timed out"},
		{wrap(store.ErrFull), http.StatusServiceUnavailable, false, "disk is full"},
		{wrap(store.ErrClosed), http.StatusServiceUnavailable, false, "closed"},
		{errors.New("disk I/O error at page 7"), http.StatusInternalServerError, false, "server had an error"},
	}
	for _, c := range cases {
		e := api.StoreError(c.err, "The response could not be read")
		if e.Status != c.status || (e.Headers["Retry-After"] != "") != c.retry || e.Code != api.CodeServerError ||
			!strings.HasPrefix(e.Message, "The response could not be read: ") || !strings.Contains(e.Message, c.says) {
			t.Errorf("%v: got %d %q %q (Retry-After %q); want %d, Retry-After %v, saying %q",
				c.err, e.Status, e.Code, e.Message, e.Headers["Retry-After"], c.status, c.retry, c.says)
		}
		if strings.Contains(e.Message, "page 7") {
			t.Errorf("%v: the message leaks the cause: %q", c.err, e.Message)
		}
	}
	own := api.BadRequest("input", api.CodeInvalidValue, "bad")
	if got := api.StoreError(fmt.Errorf("wrapped: %w", own), "x"); got != own {
		t.Errorf("an *api.Error should pass through, got %+v", got)
	}
}
