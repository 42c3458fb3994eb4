package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"agentloop/store"
	"agentloop/store/postgres/pgtest"
	"agentloop/store/storetest"

	"github.com/jackc/pgx/v5/pgconn"
)

// Replicas starting together on a new database apply each migration once.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	ms, err := steps()
	if err != nil || len(ms) == 0 {
		t.Fatalf("embedded migrations: %d, %v", len(ms), err)
	}
	dsn := pgtest.Blank(t)
	const replicas = 4
	dbs := make([]*DB, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			db, err := open(context.Background(), dsn, storetest.Log(t), defaultOptions())
			if err != nil {
				t.Errorf("open #%d: %v", i, err)
				return
			}
			dbs[i] = db
		})
	}
	wg.Wait()
	for _, db := range dbs {
		if db != nil {
			defer db.Close()
		}
	}
	if t.Failed() {
		return
	}
	if got := countRows(t, dbs[0], "schema_migrations"); got != len(ms) {
		t.Errorf("%d schema_migrations rows, want %d", got, len(ms))
	}
	if err := dbs[1].SaveResponse(context.Background(), &store.Response{ID: "resp_1", Snapshot: []byte(`{}`)}, store.LedgerRow{}); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	dsn := pgtest.Database(t)
	db := openAt(t, dsn, defaultOptions())
	if _, err := db.pool.Exec(context.Background(), `INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	db2, err := open(context.Background(), dsn, storetest.Log(t), defaultOptions())
	storetest.RefusesNewerSchema(t, db2, err)
}

func TestOpenErrorsNameTheDatabaseNotThePassword(t *testing.T) {
	_, err := open(context.Background(), "postgres://agentloop:s3cret@127.0.0.1:1/agentloop?sslmode=disable&connect_timeout=5", storetest.Log(t), defaultOptions())
	if err == nil {
		t.Fatal("open of port 1 succeeded")
	}
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), `"agentloop" at 127.0.0.1:1`) {
		t.Errorf("error %q should name the database and hide the password", err)
	}
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("error %q is not store.ErrUnavailable", err)
	}
	if _, err := open(context.Background(), "postgres://a:s3cret@host:notaport/x", storetest.Log(t), defaultOptions()); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a URL that does not parse: %v", err)
	}
}

func TestErrorClassifiers(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("exec: %w", &pgconn.PgError{Code: code, Message: "m"}) }
	cases := []struct {
		name string
		err  error
		want error // nil: no sentinel
	}{
		{"nil", nil, nil},
		{"plain", errors.New("database is locked"), nil},
		{"not found", store.ErrNotFound, nil},
		{"serialization failure", pg("40001"), store.ErrBusy},
		{"deadlock", pg("40P01"), store.ErrBusy},
		{"lock timeout", pg("55P03"), store.ErrBusy},
		{"disk full", pg("53100"), store.ErrFull},
		{"admin shutdown", pg("57P01"), store.ErrUnavailable},
		{"cannot connect now", pg("57P03"), store.ErrUnavailable},
		{"connection failure", pg("08006"), store.ErrUnavailable},
		{"broken socket", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), store.ErrUnavailable},
		{"bad password", pg("28P01"), nil},
		{"no such database", pg("3D000"), nil},
		{"unique violation", pg("23505"), nil},
		{"check violation", pg("23514"), nil},
		{"already busy", fmt.Errorf("store: save: %w", store.ErrBusy), store.ErrBusy},
	}
	sentinels := []error{store.ErrBusy, store.ErrFull, store.ErrUnavailable}
	for _, c := range cases {
		got := classify(c.err)
		if c.err != nil && got.Error() != c.err.Error() {
			t.Errorf("%s: classify changed the message %q into %q", c.name, c.err, got)
		}
		for _, s := range sentinels {
			if is := errors.Is(got, s); is != (s == c.want) {
				t.Errorf("%s: errors.Is(%v) = %v, want %v", c.name, s, is, s == c.want)
			}
		}
	}
}

func TestIntegrityCheckFindsBadReferenceCounts(t *testing.T) {
	cases := []storetest.Corruption{
		{Name: "count too high", SQL: `UPDATE item_refs SET refs = refs + 1 WHERE key = (SELECT MIN(key) FROM item_refs)`, Want: "listed by 1 responses, counted 2"},
		{Name: "count missing", SQL: `DELETE FROM item_refs WHERE key = (SELECT MIN(key) FROM item_refs)`, Want: "counted -1"},
		{Name: "item missing", SQL: `DELETE FROM items WHERE key = (SELECT MIN(key) FROM items)`, Want: "missing items"},
		{Name: "item listed by no one", SQL: `INSERT INTO items (item_id, type, json) VALUES ('x', 'message', '')`, Want: "listed by 0 responses, counted -1"},
	}
	storetest.IntegrityCatches(t, cases, func(t testing.TB) (store.Backend, func(string) error) {
		db := openAt(t, pgtest.Database(t), defaultOptions())
		return db, func(q string) error {
			_, err := db.pool.Exec(context.Background(), q)
			return err
		}
	})
}

// Two replicas on one database continue the same parent while another
// deletes it: every save succeeds (reused keys whose items went are stored
// again; row locks are taken in key order, and a deadlock is retried), every
// child reads back whole, and the reference counts stay exact.
func TestReplicasSaveAndDeleteConcurrently(t *testing.T) {
	dsn := pgtest.Database(t)
	replicas := []*DB{openAt(t, dsn, defaultOptions()), openAt(t, dsn, defaultOptions())}
	ctx := context.Background()
	var history []store.Item
	for i := range 20 {
		history = append(history, storetest.Message(fmt.Sprintf("msg_%d", i), "user", "x"))
	}
	const rounds, writers = 10, 6
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		children []*store.Response
	)
	for round := range rounds {
		root := &store.Response{ID: fmt.Sprintf("resp_root_%d", round), Snapshot: []byte(`{}`),
			Context: append([]store.Item(nil), history...), Output: []store.Item{storetest.Message("out", "assistant", "ok")}}
		if err := replicas[0].SaveResponse(ctx, root, store.LedgerRow{}); err != nil {
			t.Fatal(err)
		}
		for w := range writers {
			wg.Go(func() {
				c := storetest.Child(fmt.Sprintf("resp_%d_%d", round, w), root,
					[]store.Item{storetest.Message(fmt.Sprintf("in_%d_%d", round, w), "user", "y")}, nil)
				if err := replicas[w%2].SaveResponse(ctx, c, store.LedgerRow{}); err != nil {
					t.Errorf("save %s: %v", c.ID, err)
					return
				}
				mu.Lock()
				children = append(children, c)
				mu.Unlock()
			})
		}
		wg.Go(func() {
			if err := replicas[1].DeleteResponse(ctx, root.ID); err != nil {
				t.Errorf("delete %s: %v", root.ID, err)
			}
		})
		wg.Wait()
	}
	for _, c := range children {
		got, err := replicas[0].GetResponse(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Context) != len(c.Context) {
			t.Errorf("%s: %d context items, want %d", c.ID, len(got.Context), len(c.Context))
		}
	}
	if err := replicas[1].IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
}
