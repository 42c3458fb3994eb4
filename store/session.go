package store

import "time"

// Session is one browser login. ID is what the backend keys it by: the
// server derives it from the cookie's random token and the API key (an
// HMAC), so the database never holds a usable token, and a session made
// under another key is never found.
type Session struct {
	ID        string
	CreatedAt time.Time
	ExpiresAt time.Time
}
