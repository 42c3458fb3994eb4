// Package api holds the JSON shapes of the OpenAI Responses API as agentloop
// speaks them: create requests, input and output items (custom tool calls
// and reasoning items included), the Response object, stream events, errors,
// and the fast event encoder.
//
// It also owns what a create may hold, listed once (params.go: the SDK's
// create parameters plus agentloop's own), the strict check against it
// (ValidateCreate), the rules a JSON Schema must follow (CheckSchema, one
// table in schema.go) and the error codes (codes.go). Intended call sites
// in the engine, wired in a later session:
//   - parse: ValidateCreate(body) right after DecodeCreate, for HTTP and
//     WebSocket creates alike (its error is the 400, or the error frame);
//   - validate: CheckCallPairs(context, inputStart) once a continuation's
//     context is built (it replaces the engine's own check of outputs),
//     and InvalidEncryptedContent(blob) for a reasoning blob that package
//     seal does not open;
//   - generate: the custom tool call and reasoning summary event encoders
//     (AppendCustomToolCallInput*, AppendReasoningSummary*), and Item's
//     Summary and EncryptedContent for reasoning output items.
//
// Both the engine (server) and the agent client (rollout) use it, so it must
// never import another agentloop package, and it must never decide anything
// about transports: it only says what goes on the wire. WriteHTTPError is
// the one writer of an OpenAI error over HTTP; app's Echo error handler calls
// it for every handler's returned *Error.
package api
