// Package enginetest starts the engine in-process for its tests: both
// engines built by server.NewEngines (the constructor app uses, so what
// the tests exercise is what runs), a SQLite store in t.TempDir(), and an
// httptest server, without the playground, the inspector or the
// process's access rules (those are app's, and tested there).
package enginetest
