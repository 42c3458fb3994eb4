package wsmode

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/server/core"
)

// The WebSocket mode's message rules, applied in parse, and the errors a
// connection gets as a whole. They hold no state.

// ConnectionLimitReached is the error a connection gets when its lifetime
// ends, or when the connection-limit drill fires, in OpenAI's words.
func ConnectionLimitReached(lifetime time.Duration) *api.Error {
	return api.BadRequest("", api.CodeWebSocketConnectionLimitReached,
		"Responses websocket connection limit reached (%s). Create a new websocket connection to continue.", lifetimeText(lifetime))
}

// lifetimeText says a lifetime as the limit message does: whole minutes
// as "60 minutes", anything else as a Go duration ("300ms").
func lifetimeText(d time.Duration) string {
	switch {
	case d == time.Minute:
		return "1 minute"
	case d > time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + " minutes"
	}
	return d.String()
}

// admitMessage applies the WebSocket message rules to a decoded envelope:
// its type, and what this transport does not support.
func admitMessage(req *api.CreateRequest) *api.Error {
	switch req.Type {
	case api.ClientResponseCreate:
	case api.ClientResponseProcessed:
		return core.ErrProcessed
	case "":
		return api.BadRequest("type", api.CodeMissingRequiredParameter, "Missing required parameter: 'type'.")
	default:
		return api.BadRequest("type", api.CodeInvalidValue, "Invalid value: '%s'. Supported values are: 'response.create' and 'response.processed'.", req.Type)
	}
	if req.Background != nil && *req.Background {
		return api.BadRequest("background", api.CodeUnsupportedParameter, "'background' is not supported over WebSocket.")
	}
	if req.Model == "" {
		return api.MissingParameter("model")
	}
	return nil
}

// isPrototype says whether an upgrade request asked for the prototype: the
// legacy beta value among OpenAI-Beta's comma-separated values.
func isPrototype(r *http.Request) bool {
	for _, h := range r.Header.Values("OpenAI-Beta") {
		for _, v := range strings.Split(h, ",") {
			if strings.EqualFold(strings.TrimSpace(v), api.OpenAIBetaPrototype) {
				return true
			}
		}
	}
	return false
}

// admitPrototype is admitMessage on a prototype connection: it also names
// response.append, which is only valid while a response is paused.
func admitPrototype(req *api.CreateRequest) *api.Error {
	if req.Type == api.ClientResponseAppend {
		return api.BadRequest("type", api.CodeInvalidValue,
			"No response is paused on this connection: response.append resumes a response that ended a segment with response.done.")
	}
	if err := admitMessage(req); err != nil {
		return err
	}
	if req.StreamID != nil {
		return api.BadRequest("stream_id", api.CodeUnsupportedParameter, "The prototype serves the default lane only: omit 'stream_id'.")
	}
	return nil
}
