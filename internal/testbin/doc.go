// Package testbin builds a main package of this module once per test
// process, for tests that run it as a real process (the agentloop binary,
// the check's reference client). Builds use the plain toolchain, without
// the race detector, whatever the test binary was built with.
package testbin
