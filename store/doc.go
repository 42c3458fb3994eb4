// Package store is the storage contract: the records the engine and the
// race runner keep (stored responses and their items, the usage ledger,
// runs with their lanes, turns and spans, the inspector's client sessions
// and their turns, workloads, conversations, background responses) and the errors every backend returns
// (ErrNotFound, ErrExists, ErrInUse, ErrClosed, ErrBusy, ErrFull,
// ErrTooMany, ErrUnavailable), and Backend, the
// whole contract a backend implements.
//
// It holds types and sentinels only, no driver and no SQL, so the engine,
// rollout, web and any backend use it without importing a database. The
// backends live in packages named after their technology (store/sqlite,
// store/postgres), share what is not SQL text or driver
// (store/internal/sqlstore, store/internal/ledger), and pass one contract
// suite (store/storetest);
// the consumers declare the small interfaces they need (server.Store,
// rollout.RunStore, web.RunDB).
//
// store must never import another agentloop package or a database driver:
// wire JSON (items, snapshots, run summaries) is opaque bytes here.
package store
