package store

import "time"

// InspectSession is one client session the inspector watched: a WebSocket
// connection, or the HTTP requests sharing a prompt_cache_key or a
// connection. Key is the engine's session key; Summary is opaque JSON owned
// by the inspector, rewritten as turns arrive.
type InspectSession struct {
	ID, Key, Transport          string
	UserAgent, Originator, Beta string
	// Race tags a session of the playground's own races: "RUN_ID/LANE".
	Race                 string
	CreatedAt, UpdatedAt time.Time
	Turns                int
	Summary              []byte
}

// InspectTurn is one request of an inspected session. Turn is opaque JSON
// owned by the inspector: timings and counts, never content.
type InspectTurn struct {
	SessionID  string
	Index      int
	ResponseID string
	CreatedAt  time.Time
	Turn       []byte
}
