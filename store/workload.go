package store

import "time"

// Workload is a stored workload (package workload's format, as JSON): the
// shape of an agent session, with no content. It gets a permalink and the
// runs' retention.
type Workload struct {
	ID        string
	CreatedAt time.Time
	Source    string // where it came from, as the workload says
	Turns     int
	JSON      []byte
}
