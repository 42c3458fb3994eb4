// Package api holds the JSON shapes of the OpenAI Responses API as agentloop
// speaks them: create requests, input and output items, the Response object,
// stream events, errors, and the fast event encoder.
//
// Both the engine (server) and the agent client (rollout) use it, so it must
// never import another agentloop package, and it must never decide anything
// about transports: it only says what goes on the wire. WriteHTTPError is
// the one writer of an OpenAI error over HTTP; app's Echo error handler calls
// it for every handler's returned *Error.
package api
