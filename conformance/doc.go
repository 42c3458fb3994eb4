// Package conformance holds the tests that take the official SDKs' own
// types as the reference for what the engine sends: every Response, stream
// event, item and error the engine produces for a matrix of requests
// (cases, in capture_test.go) over HTTP JSON, HTTP+SSE and WebSocket mode
// is captured, then
//   - type-checked with `tsc --strict` against the openai npm package's
//     declarations (each capture assigned to its declared type with
//     `satisfies`, so an extra, missing or mistyped field fails), with a
//     mutated capture that must fail to prove the check bites;
//   - decoded into openai-go's typed structs, with no field left unknown
//     (JSON.ExtraFields), no required field missing and no event or item
//     type openai-go does not know;
//
// and Node scripts drive the engine through the SDK itself: sdk.mjs
// (responses.create streamed, responses.parse with zod) and sessions.mjs
// (the long-session features: conversations, background responses,
// compaction, the context window over HTTP, and over WebSocket mode with
// the SDK's ResponsesWS a continuation, a compaction and steering).
//
// The npm packages (openai, zod, TypeScript and ws) are pinned in scripts/sdk-setup.sh and installed into
// .clients/sdk by `make test` (scripts/clients-setup.sh). Without them the
// TypeScript and Node tests skip, saying why; with CI set they fail. The
// package holds tests only; it must never be imported.
package conformance
