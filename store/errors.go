package store

import "errors"

// The errors every backend returns, wrapped with detail; test them with
// errors.Is.
var (
	// ErrNotFound reports that a response, item or run does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrExists reports that a response or run with the same id is already stored.
	ErrExists = errors.New("store: already exists")
	// ErrClosed reports a call on a store that has been closed.
	ErrClosed = errors.New("store: closed")
	// ErrBusy reports that the database stayed locked by another writer
	// past the backend's lock timeout; the call may succeed if retried.
	ErrBusy = errors.New("store: database is busy")
	// ErrFull reports that the disk, or the database's size limit, is full.
	ErrFull = errors.New("store: storage is full")
	// ErrUnavailable reports that the database server cannot be reached
	// (refused, reset, shut down); the call may succeed if retried once it
	// is back.
	ErrUnavailable = errors.New("store: database is unavailable")
)
