package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// Error is an OpenAI-shaped error. Status is the HTTP status that goes with it;
// over WebSocket it travels in the frame's "status" field.
type Error struct {
	Status  int
	Type    string
	Code    string
	Message string
	Param   string
	// Headers are optional header-like strings (rate limits on a 429);
	// Codex turns them into HTTP headers.
	Headers map[string]string
}

func (e *Error) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Message)
}

// Errorf builds an invalid_request_error with the given status.
func Errorf(status int, param, code, format string, args ...any) *Error {
	typ := "invalid_request_error"
	switch {
	case status >= 500:
		typ = "server_error"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	}
	return &Error{Status: status, Type: typ, Code: code, Message: fmt.Sprintf(format, args...), Param: param}
}

// BadRequest is a 400 invalid_request_error.
func BadRequest(param, code, format string, args ...any) *Error {
	return Errorf(http.StatusBadRequest, param, code, format, args...)
}

// MissingParameter is the 400 for a required parameter the request left
// out, e.g. a create without 'model'.
func MissingParameter(param string) *Error {
	return BadRequest(param, CodeMissingRequiredParameter, "Missing required parameter: '%s'.", param)
}

// PreviousResponseNotFound is the error for an unknown or unreachable parent.
func PreviousResponseNotFound(id string) *Error {
	return BadRequest("previous_response_id", CodePreviousResponseNotFound,
		"Previous response with id '%s' not found.", id)
}

// ResponseNotFound is the 404 for GET/DELETE of an unknown response.
func ResponseNotFound(id string) *Error {
	return Errorf(http.StatusNotFound, "", "", "Response with id '%s' not found.", id)
}

// NotStreamable is the 400 for GET /v1/responses/{id}?stream=true on a
// response that was not created in the background: only a background
// response's events can be streamed again (docs/protocol.md, "Retrieve").
func NotStreamable(id string) *Error {
	return Errorf(http.StatusBadRequest, "stream", CodeInvalidValue,
		"Response '%s' cannot be streamed: only a response created with background=true can be streamed when retrieved.", id)
}

// ServerError is a 500 server_error that hides the internal cause.
func ServerError(format string, args ...any) *Error {
	return Errorf(http.StatusInternalServerError, "", CodeServerError, format, args...)
}

// storeFailure is how a store error says why it failed and whether the
// same call may succeed soon (store's sentinels implement it), so api reads
// store errors without importing store.
type storeFailure interface {
	StoreFailure() (reason string, passing bool)
}

// StoreError maps a failed storage call to the client's error: the one rule
// every route follows. doing says what could not be done ("The response
// could not be stored").
//   - A store failure, or a call that timed out, is a 503 server_error
//     saying why. When the failure is passing (the database was locked or
//     unreachable, or the call timed out) it carries Retry-After: 1.
//   - Any other error is a 500 server_error that hides its cause.
//
// An *Error passes through unchanged. A missing record stays with the
// caller, which knows what was missing (a 404, or a 400 naming the parent).
func StoreError(err error, doing string) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	var reason string
	var passing bool
	var sf storeFailure
	switch {
	case errors.As(err, &sf):
		reason, passing = sf.StoreFailure()
	case errors.Is(err, context.DeadlineExceeded):
		reason, passing = "the database is locked or busy, and the call timed out.", true
	default:
		return ServerError("%s: the server had an error.", doing)
	}
	if !passing {
		return Errorf(http.StatusServiceUnavailable, "", CodeServerError, "%s: %s", doing, reason)
	}
	e := Errorf(http.StatusServiceUnavailable, "", CodeServerError, "%s: %s Try again.", doing, reason)
	e.Headers = map[string]string{"Retry-After": "1"}
	return e
}

// AppendErrorBody appends {"message":…,"type":…,"param":…,"code":…}:
// OpenAI's error fields and nothing else, as an HTTP body carries them.
// Headers go out as HTTP headers there (WriteHTTPError).
func AppendErrorBody(b []byte, e *Error) []byte { return appendErrorBody(b, e, false) }

// appendErrorBody appends the error object, with the headers field when
// withHeaders (a WebSocket error frame, where clients read it).
func appendErrorBody(b []byte, e *Error, withHeaders bool) []byte {
	b = append(b, `{"message":`...)
	b = AppendString(b, e.Message)
	b = append(b, `,"type":`...)
	b = AppendString(b, e.Type)
	b = append(b, `,"param":`...)
	b = appendNullableString(b, e.Param)
	b = append(b, `,"code":`...)
	b = appendNullableString(b, e.Code)
	if withHeaders && len(e.Headers) > 0 {
		b = append(b, `,"headers":{`...)
		first := true
		for _, k := range sortedKeys(e.Headers) {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = AppendString(b, k)
			b = append(b, ':')
			b = AppendString(b, e.Headers[k])
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// AppendHTTPError appends the HTTP error envelope {"error":{…}}.
func AppendHTTPError(b []byte, e *Error) []byte {
	b = append(b, `{"error":`...)
	b = AppendErrorBody(b, e)
	return append(b, '}')
}

// WriteHTTPError writes e as an HTTP response: its status, the JSON envelope,
// its Headers (Retry-After on a 429) and Cache-Control: no-store. It is the
// only writer of an OpenAI error over HTTP; the caller checks that nothing
// was written before.
func WriteHTTPError(w http.ResponseWriter, e *Error) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	for k, v := range e.Headers {
		h.Set(k, v)
	}
	w.WriteHeader(e.Status)
	_, err := w.Write(AppendHTTPError(nil, e))
	return err
}

// AppendWSError appends a request-level WebSocket error frame:
// {"type":"error","status":N,"error":{…}}, its headers inside the error
// (clients read them). streamID is omitted when empty.
func AppendWSError(b []byte, e *Error, streamID string) []byte {
	b = append(b, `{"type":"error","status":`...)
	b = appendInt(b, int64(e.Status))
	if streamID != "" {
		b = append(b, `,"stream_id":`...)
		b = AppendString(b, streamID)
	}
	b = append(b, `,"error":`...)
	b = appendErrorBody(b, e, true)
	return append(b, '}')
}

// AppendStreamError appends the flat in-stream error event:
// {"type":"error","code":…,"message":…,"param":…,"sequence_number":N}.
func AppendStreamError(b []byte, seq int, e *Error) []byte {
	b = append(b, `{"type":"error","code":`...)
	b = appendNullableString(b, e.Code)
	b = append(b, `,"message":`...)
	b = AppendString(b, e.Message)
	b = append(b, `,"param":`...)
	b = appendNullableString(b, e.Param)
	b = append(b, `,"sequence_number":`...)
	b = appendInt(b, int64(seq))
	return append(b, '}')
}

// InvalidEncryptedContent is the hosted API's 400 for a reasoning (or
// compaction) blob that does not open (package seal): a changed blob, or
// one another server made. The message names the blob by its ends, as the
// hosted API does.
func InvalidEncryptedContent(blob string) *Error {
	shown := blob
	if len(blob) > 12 {
		shown = blob[:4] + "..." + blob[len(blob)-4:]
	}
	return BadRequest("", CodeInvalidEncryptedContent,
		"The encrypted content %s could not be verified. Reason: Encrypted content could not be decrypted or parsed.", shown)
}
