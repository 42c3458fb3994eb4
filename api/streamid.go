package api

import (
	"bytes"
	"strconv"
)

// WebSocket lanes (docs/protocol.md, "`stream_id` lanes"): a response.create's stream_id names
// a FIFO lane of its connection, and every event of a named lane echoes it.
const (
	// MaxStreamIDLen is the longest stream_id.
	MaxStreamIDLen = 256
	// MaxNamedStreams is how many distinct named stream_ids one connection
	// may use over its life; the default lane does not count.
	MaxNamedStreams = 32
	// MaxActiveResponses is how many responses one connection runs at
	// once, over all its lanes; further creates queue.
	MaxActiveResponses = 16
)

// ValidStreamID reports whether s is a stream_id: 1 to MaxStreamIDLen
// ASCII letters, digits, underscores, hyphens or periods. Such an id needs
// no escaping in JSON.
func ValidStreamID(s string) bool {
	if len(s) == 0 || len(s) > MaxStreamIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// StreamIDPattern is ValidStreamID's rule as a regular expression, for the
// page that checks a stream_id before it sends one (views/explorer.templ).
var StreamIDPattern = "^[A-Za-z0-9_.-]{1," + strconv.Itoa(MaxStreamIDLen) + "}$"

// InvalidStreamID is the error for a stream_id that is not one. Its frame
// carries no stream_id: no lane can be named by it.
func InvalidStreamID() *Error {
	return BadRequest("stream_id", CodeInvalidStreamID,
		"The 'stream_id' field must be a non-empty string with at most %d characters and may only contain letters, numbers, underscores, hyphens, and periods.", MaxStreamIDLen)
}

// StreamLimitReached is the error for a new stream_id on a connection that
// has used MaxNamedStreams already. Its frame carries the refused id.
func StreamLimitReached() *Error {
	return BadRequest("stream_id", CodeWebSocketStreamLimitReached,
		"This WebSocket connection has reached its maximum number of distinct stream IDs (%d). Reuse an existing stream_id or open a new WebSocket connection.", MaxNamedStreams)
}

var typeKey = []byte(`{"type":"`)

// AppendWithStreamID appends event, one JSON object, with a stream_id
// field added after its type: {"type":"…","stream_id":"ID",…}. id must be
// a valid stream_id.
func AppendWithStreamID(dst, event []byte, id string) []byte {
	at := 1 // after the opening brace, for an event that does not open with its type
	if bytes.HasPrefix(event, typeKey) {
		for i := len(typeKey); i < len(event); i++ {
			if event[i] == '\\' {
				i++ // the escaped byte cannot end the string
			} else if event[i] == '"' {
				at = i + 1
				break
			}
		}
	}
	if at == 1 {
		dst = append(dst, event[:1]...)
		dst = append(dst, `"stream_id":"`...)
		dst = append(dst, id...)
		dst = append(dst, '"')
		if len(bytes.TrimSpace(event[1:])) > 1 {
			dst = append(dst, ',')
		}
		return append(dst, event[1:]...)
	}
	dst = append(dst, event[:at]...)
	dst = append(dst, `,"stream_id":"`...)
	dst = append(dst, id...)
	dst = append(dst, '"')
	return append(dst, event[at:]...)
}
