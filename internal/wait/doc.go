// Package wait is the tests' one way to wait for a state: poll a condition
// until it holds or a generous deadline passes, then fail naming what was
// awaited and the last state seen. Tests wait for states, never for a
// moment, so nothing here sleeps a fixed time for its own sake.
//
// It is for tests only and must import nothing but the standard library.
package wait
