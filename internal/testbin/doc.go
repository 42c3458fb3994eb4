// Package testbin builds a main package of this module for tests that run
// it as a real process (the agentloop binary, the check's reference
// client). Builds use the plain toolchain, without the race detector,
// whatever the test binary was built with, and land in the module's
// .testbin folder, where every later test process finds them up to date
// (go build's own check) instead of linking its own copy.
package testbin
