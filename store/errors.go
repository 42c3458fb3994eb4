package store

// The errors every backend returns, wrapped with detail; test them with
// errors.Is. Each says, through StoreFailure, why a call failed in words a
// client can read and whether the same call may succeed soon; api.StoreError
// reads that to answer the client, without either package importing the
// other.
var (
	// ErrNotFound reports that a response, item or run does not exist.
	ErrNotFound error = &failure{"store: not found", "the record does not exist.", false}
	// ErrExists reports that a response or run with the same id is already stored.
	ErrExists error = &failure{"store: already exists", "a record with the same id is already stored.", false}
	// ErrInUse reports that a record another one names (a workload a run
	// raced) cannot be deleted while that one is kept.
	ErrInUse error = &failure{"store: in use", "another record still names it.", false}
	// ErrClosed reports a call on a store that has been closed.
	ErrClosed error = &failure{"store: closed", "the store is closed.", false}
	// ErrBusy reports that the database stayed locked by another writer
	// past the backend's lock timeout; the call may succeed if retried.
	ErrBusy error = &failure{"store: database is busy", "the database is locked.", true}
	// ErrTooMany reports that a client already has as many background
	// responses queued as it may (CreateBackground's maxQueued).
	ErrTooMany error = &failure{"store: too many queued", "too many background responses are queued.", true}
	// ErrFull reports that the disk, or the database's size limit, is full.
	ErrFull error = &failure{"store: storage is full", "the disk is full.", false}
	// ErrUnavailable reports that the database server cannot be reached
	// (refused, reset, shut down); the call may succeed if retried once it
	// is back.
	ErrUnavailable error = &failure{"store: database is unavailable", "the database cannot be reached.", true}
)

// failure is the type of the sentinels above.
type failure struct {
	msg     string
	reason  string
	passing bool
}

func (f *failure) Error() string { return f.msg }

// StoreFailure says why the call failed, as a sentence's end for a client,
// and whether the failure is passing: the same call may succeed soon.
func (f *failure) StoreFailure() (reason string, passing bool) { return f.reason, f.passing }
