// Package api holds the JSON shapes of the OpenAI Responses API as agentloop
// speaks them: create requests, input and output items (custom tool calls
// and reasoning items included), the Response object, stream events, errors,
// and the fast event encoder.
//
// It also owns what a create may hold, listed once (params.go: the SDK's
// create parameters plus agentloop's own), the strict check against it
// (ValidateCreate), the rules a JSON Schema must follow (CheckSchema, one
// table in schema.go) and the error codes (codes.go). Their call sites in
// the engine (server/core): parse calls ValidateCreateWith right after
// DecodeCreate, for HTTP and WebSocket creates alike, with CheckTools
// cached; validate calls CheckCallPairs once the context is built; the
// streamer writes custom tool calls with AppendCustomToolCallInput* and
// reasoning items with AppendReasoningSummary* (reasoning.go reads a
// create's reasoning: ReasoningOf; SpanReasoning names its span); validate
// answers a reasoning blob that package seal does not open with
// InvalidEncryptedContent(blob).
// Long sessions (compaction.go): the compaction item, context_management's
// threshold (CreateRequest.Compaction), the standalone compaction's
// parameters (ValidateCompact) and answer (CompactedResponse), the rule
// of what a compaction keeps (CompactionKept) and the context window's
// error (ContextLengthExceeded).
//
// Both the engine (server) and the agent client (rollout) use it, so it must
// never import another agentloop package, and it must never decide anything
// about transports: it only says what goes on the wire. WriteHTTPError is
// the one writer of an OpenAI error over HTTP; app's Echo error handler calls
// it for every handler's returned *Error.
package api
