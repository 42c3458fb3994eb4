package sqlstore

import (
	"errors"
	"fmt"

	"agentloop/store"
)

// ErrorKind marks the driver errors Is holds for with the store sentinel
// Kind (store.ErrBusy, store.ErrFull, ...).
type ErrorKind struct {
	Kind error
	Is   func(error) bool
}

// Classify marks err with the Kind of the first of kinds that holds for
// it (see Mark), or returns it as it is.
func Classify(err error, kinds []ErrorKind) error {
	if err == nil {
		return nil
	}
	for _, k := range kinds {
		if k.Is(err) {
			return Mark(k.Kind, err)
		}
	}
	return err
}

// Mark returns err marked with the store sentinel kind, so callers test it
// with errors.Is and without the driver; the driver's error stays in the
// chain and the message is unchanged. A nil kind, or an err that already
// is kind, comes back as it is.
func Mark(kind, err error) error {
	if kind == nil || err == nil || errors.Is(err, kind) {
		return err
	}
	return &classified{kind: kind, err: err}
}

// classified is a driver error marked with a store sentinel.
type classified struct{ kind, err error }

func (e *classified) Error() string   { return e.err.Error() }
func (e *classified) Unwrap() []error { return []error{e.kind, e.err} }

// wrap leaves store.ErrNotFound as it is and prefixes anything else with
// the operation: a caller matches the sentinel, a log reads the rest.
func wrap(op string, err error) error {
	if err == nil || errors.Is(err, store.ErrNotFound) {
		return err
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// notFound is store.ErrNotFound naming what was missing.
func notFound(what string) error { return fmt.Errorf("%w: %s", store.ErrNotFound, what) }

// expectOne is store.ErrNotFound naming what when a statement changed no
// row.
func expectOne(n int64, err error, what string) error {
	if err == nil && n == 0 {
		return notFound(what)
	}
	return err
}

// clamp bounds a page size: 0 or less gives def, more than max gives max.
func clamp(limit, def, max int) int {
	switch {
	case limit <= 0:
		return def
	case limit > max:
		return max
	}
	return limit
}
