package store

// Trace is an engine trace kept where every replica can read it: its
// response id, the replica that served it, when it started, and its JSON
// (timings and counts, never content).
type Trace struct {
	ResponseID    string
	Replica       string
	StartedUnixNS int64
	JSON          []byte
}
