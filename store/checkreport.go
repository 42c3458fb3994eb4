package store

import "time"

// CheckReport is a stored report card of `agentloop check` (package
// check's Report, as JSON) with the counts a list shows. It gets a
// permalink and the runs' retention.
type CheckReport struct {
	ID        string
	CreatedAt time.Time
	Client    string // the client's command line
	Passed    int
	Failed    int
	// NotExercised counts the checks the client never reached.
	NotExercised int
	JSON         []byte
}
