// Package app assembles one agentloop process: the store (a SQLite file,
// or PostgreSQL for a postgres:// URL; OpenStore chooses), the two
// engines (/v1 with request-level caches, /baseline/v1 without) sharing one
// simulated accelerator, the playground, metrics, and the access rules
// (web's cross-site guard on every route, the API key with its login
// sessions and guess throttle, who a client is (client.go), host
// allowlist, per-address limits, security headers, readiness), all on one
// Echo instance and one listener, with the one HTTP
// error handler (ErrorHandler) that turns every returned error into a
// response.
//
// It exists so that cmd/agentloop, the race command and the browser tests
// start exactly the same server. It owns wiring and lifecycle only: it must
// never implement a feature of the packages it wires.
package app
