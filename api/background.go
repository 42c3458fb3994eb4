package api

import "net/http"

// EventQueued is the event of a background response waiting to run
// (docs/protocol.md "Background responses"), after response.created.
const EventQueued = "response.queued"

// NotCancellable is the 400 for a cancel of a response not created in the
// background.
func NotCancellable(id string) *Error {
	return Errorf(http.StatusBadRequest, "", "", "Only responses created with background=true can be cancelled (response '%s' was not).", id)
}

// BackgroundNeedsStore is the 400 for background:true with store:false: a
// background response is kept so that it can be polled.
func BackgroundNeedsStore() *Error {
	return BadRequest("store", CodeInvalidValue, "Background responses must be stored: 'store' must be true when 'background' is true.")
}

// TooManyQueued is the 429 for a client past its queued background
// responses.
func TooManyQueued(limit int) *Error {
	e := Errorf(http.StatusTooManyRequests, "", CodeRateLimitExceeded,
		"Too many background responses queued: a client may have %d waiting to run. Wait for one to start, or cancel one.", limit)
	e.Headers = map[string]string{"Retry-After": "1"}
	return e
}
