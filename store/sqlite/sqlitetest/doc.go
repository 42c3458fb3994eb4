// Package sqlitetest gives a test a SQLite database file that is already
// migrated: a copy of one the test binary migrated once, as pgtest's
// Prepare gives each PostgreSQL test a copy of its template. A new file
// runs every migration when it is first opened, about 100 ms of CPU under
// the race detector, and the engine's and the app's tests open a few
// hundred. The store's own tests open new files: migrating is theirs to
// test.
package sqlitetest
