package api

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Steering over WebSocket mode (docs/protocol.md, "Steering"): the client
// message response.steer, the events that answer it and their codes, as
// the SDKs' types name them.
const (
	ClientResponseSteer = "response.steer"

	EventSteerAccepted = "response.steer.accepted"
	EventSteerPending  = "response.steer.pending"
	EventSteerFailed   = "response.steer.failed"

	// IncompleteSteered is incomplete_details.reason of a response that
	// stopped between output items to hand over to its successor.
	IncompleteSteered = "steered"
	// SteerWaitingForRequiredInput is response.steer.pending's reason: the
	// response waits for the outputs of its tool calls.
	SteerWaitingForRequiredInput = "waiting_for_required_input"
)

// The codes of response.steer.failed.
const (
	SteerResponseNotFound        = "response_not_found"
	SteerInvalidInput            = "invalid_input"
	SteerNotSupported            = "steering_not_supported"
	SteerTooManyPending          = "too_many_pending_steers"
	SteerResponseCompleted       = "response_already_completed"
	SteerResponseNotActive       = "response_not_active"
	SteerSuccessorCreationFailed = "successor_creation_failed"
)

// MaxPendingSteers bounds the steering submissions a response holds
// before it hands over; one more gets too_many_pending_steers.
const MaxPendingSteers = 16

// SteerRequest is a response.steer message: the response it steers and
// the input its successor takes, as sent (Input, which a failure returns)
// and as items (user messages only).
type SteerRequest struct {
	PreviousResponseID string
	Input              json.RawMessage
	Items              []Item
}

// SteerFailure is why a response.steer is refused: a code of
// response.steer.failed and its message.
type SteerFailure struct {
	Code, Message string
}

// SteerFinished refuses steering for response id, which has finished.
func SteerFinished(id string) *SteerFailure {
	return steerFailed(SteerResponseCompleted, "Response '%s' has finished and takes no more steering input: continue it with response.create.", id)
}

func steerFailed(code, format string, args ...any) *SteerFailure {
	return &SteerFailure{Code: code, Message: fmt.Sprintf(format, args...)}
}

// The compact ways a create names its type first or last: a frame that
// opens or closes so is no steer, and is not searched (a create may be
// megabytes).
var (
	createTypeFirst = []byte(`{"type":"` + ClientResponseCreate + `"`)
	createTypeLast  = []byte(`"type":"` + ClientResponseCreate + `"}`)
)

// IsSteer says whether a frame is a response.steer message. It decodes
// the type only of a frame that names it.
func IsSteer(body []byte) bool {
	b := bytes.TrimSpace(body)
	if bytes.HasPrefix(b, createTypeFirst) || bytes.HasSuffix(b, createTypeLast) ||
		!bytes.Contains(b, []byte(`"`+ClientResponseSteer+`"`)) {
		return false
	}
	var env struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(body, &env) == nil && env.Type == ClientResponseSteer
}

// steerFields are the only fields response.steer takes: the target
// response decides the lane, so stream_id is not one of them.
var steerFields = map[string]bool{"type": true, "previous_response_id": true, "input": true}

// steerMessageFields are the fields a steering message may carry.
var steerMessageFields = map[string]bool{"type": true, "role": true, "content": true, "id": true, "status": true}

// steerParts are the content parts a steering message may carry.
var steerParts = map[string]bool{"input_text": true, "input_image": true, "input_file": true}

// DecodeSteer reads a response.steer message. What it could read of it
// comes back with a failure too, for the failure event to return.
func DecodeSteer(body []byte) (*SteerRequest, *SteerFailure) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return &SteerRequest{}, steerFailed(SteerInvalidInput, "response.steer must be one JSON object.")
	}
	req := &SteerRequest{Input: bytes.TrimSpace(fields["input"])}
	json.Unmarshal(fields["previous_response_id"], &req.PreviousResponseID) //nolint:errcheck // checked below
	for name := range fields {
		if !steerFields[name] {
			return req, steerFailed(SteerInvalidInput, "Unknown parameter: '%s'. response.steer takes only 'type', 'previous_response_id' and 'input'.", name)
		}
	}
	var id any
	if err := json.Unmarshal(fields["previous_response_id"], &id); err != nil || id == nil {
		return req, steerFailed(SteerInvalidInput, "Missing required parameter: 'previous_response_id'.")
	}
	if _, ok := id.(string); !ok || req.PreviousResponseID == "" {
		return req, steerFailed(SteerInvalidInput, "Invalid 'previous_response_id': expected the id of a response in flight on this connection.")
	}
	items, fail := decodeSteerInput(req.Input)
	req.Items = items
	return req, fail
}

// decodeSteerInput holds steering input to what steering accepts: a
// non-empty string, or a non-empty array of user messages.
func decodeSteerInput(raw json.RawMessage) ([]Item, *SteerFailure) {
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, steerFailed(SteerInvalidInput, "Missing required parameter: 'input'.")
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil || s == "" {
			return nil, steerFailed(SteerInvalidInput, "Invalid 'input': expected a non-empty string or a non-empty array of user messages.")
		}
		return []Item{{Type: TypeMessage, Role: "user", Content: []Part{{Type: "input_text", Text: s}}}}, nil
	case raw[0] != '[':
		return nil, steerFailed(SteerInvalidInput, "Invalid type for 'input': expected a string or an array of user messages.")
	}
	var raws []json.RawMessage
	if json.Unmarshal(raw, &raws) != nil || len(raws) == 0 {
		return nil, steerFailed(SteerInvalidInput, "Invalid 'input': expected a non-empty string or a non-empty array of user messages.")
	}
	items := make([]Item, len(raws))
	for i, r := range raws {
		param := fmt.Sprintf("input[%d]", i)
		var fields map[string]json.RawMessage
		if json.Unmarshal(r, &fields) != nil {
			return nil, steerFailed(SteerInvalidInput, "Invalid '%s': expected a message object.", param)
		}
		var typ string
		json.Unmarshal(fields["type"], &typ) //nolint:errcheck // DecodeItem checks it
		if typ != "" && typ != TypeMessage {
			return nil, steerFailed(SteerInvalidInput, "Invalid '%s': steering takes messages with the 'user' role only, not '%s' items.", param, typ)
		}
		for name := range fields {
			if !steerMessageFields[name] {
				return nil, steerFailed(SteerInvalidInput, "Invalid '%s': steering takes user messages with 'type', 'role' and 'content' only (got '%s').", param, name)
			}
		}
		it, err := DecodeItem(r, param)
		if err != nil {
			return nil, steerFailed(SteerInvalidInput, "%s", err.Message)
		}
		if it.Type != TypeMessage || it.Role != "user" {
			return nil, steerFailed(SteerInvalidInput, "Invalid '%s': steering takes messages with the 'user' role only.", param)
		}
		for _, p := range it.Content {
			if !steerParts[p.Type] {
				return nil, steerFailed(SteerInvalidInput, "Invalid '%s.content': steering takes 'input_text', 'input_image' and 'input_file' parts only (got '%s').", param, p.Type)
			}
		}
		items[i] = it
	}
	return items, nil
}

// SteerRef names a steering submission in an event: its id and the
// response it steers.
type SteerRef struct {
	ID                 string
	PreviousResponseID string
}

func appendSteerRef(b []byte, s SteerRef) []byte {
	b = append(b, `,"steer":{"id":`...)
	b = AppendString(b, s.ID)
	b = append(b, `,"previous_response_id":`...)
	b = AppendString(b, s.PreviousResponseID)
	return append(b, '}')
}

// AppendSteerAccepted appends response.steer.accepted.
func AppendSteerAccepted(b []byte, seq int, s SteerRef) []byte {
	b = appendHead(b, EventSteerAccepted, seq)
	b = appendSteerRef(b, s)
	return append(b, '}')
}

// RequiredInput is a stub of response.steer.pending's required_input: a
// tool output the client owes before the steering input can go on.
type RequiredInput struct {
	Type   string // TypeFunctionCallOutput or TypeCustomToolCallOutput
	CallID string
	Name   string // a function call's name; a custom tool's output names none
}

// AppendSteerPending appends response.steer.pending, waiting for the
// outputs required names.
func AppendSteerPending(b []byte, seq int, s SteerRef, required []RequiredInput) []byte {
	b = appendHead(b, EventSteerPending, seq)
	b = append(b, `,"reason":"`+SteerWaitingForRequiredInput+`","required_input":[`...)
	for i, r := range required {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = AppendString(b, r.Type)
		b = append(b, `,"call_id":`...)
		b = AppendString(b, r.CallID)
		if r.Type == TypeFunctionCallOutput {
			b = append(b, `,"name":`...)
			b = AppendString(b, r.Name)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	b = appendSteerRef(b, s)
	return append(b, '}')
}

// AppendSteerFailed appends response.steer.failed: the submission with
// its input as sent (and its id once it had one), and why.
func AppendSteerFailed(b []byte, seq int, s SteerRef, input json.RawMessage, f *SteerFailure) []byte {
	b = appendHead(b, EventSteerFailed, seq)
	b = append(b, `,"error":{"type":"invalid_request_error","code":`...)
	b = AppendString(b, f.Code)
	b = append(b, `,"message":`...)
	b = AppendString(b, f.Message)
	b = append(b, `},"steer":{`...)
	if s.ID != "" {
		b = append(b, `"id":`...)
		b = AppendString(b, s.ID)
		b = append(b, ',')
	}
	b = append(b, `"previous_response_id":`...)
	b = AppendString(b, s.PreviousResponseID)
	b = append(b, `,"input":`...)
	if len(input) == 0 || !json.Valid(input) {
		input = json.RawMessage(`""`)
	}
	b = append(b, input...)
	return append(b, `}}`...)
}
