// Package apptest starts the real agentloop app for tests: the same wiring
// as serve (store, both engines, playground, access rules), in-process, on
// a free loopback port with a database in the test's temporary directory,
// logging through t.Log and shut down when the test ends.
//
// It is the one way tests start a server, so every test package exercises
// what users run. It must never wire anything itself: what a test needs
// differently is an edit of app.Config.
package apptest
