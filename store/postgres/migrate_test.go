package postgres

import (
	"bytes"
	"context"
	"testing"

	"agentloop/store/postgres/pgtest"

	"github.com/jackc/pgx/v5"
)

// TestRunsLoseTheirWorkloadCopies opens a database at schema version 6
// whose runs hold their workload in their config (one also names its
// stored copy): after migrating, each run names a stored workload and its
// config holds none; a config that is not JSON stays as it was.
func TestRunsLoseTheirWorkloadCopies(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Blank(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := steps()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Version > 6 {
			break
		}
		if _, err := conn.Exec(ctx, m.SQL); err != nil {
			t.Fatal(m.Name, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations VALUES ($1, $2, 0)`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	const wl = `{"version":1,"source":"hand","turns":[{"input":[{"kind":"user_message","tokens":5}],"output_tokens":3}]}`
	for _, r := range []struct{ id, config string }{
		{"run_inline", `{"scenario":"workload","workload":` + wl + `}`},
		{"run_named", `{"scenario":"workload","workload":` + wl + `,"workload_id":"wl_named"}`},
		{"run_scenario", `{"scenario":"chat"}`},
		{"run_garbled", `not json "workload"`},
	} {
		if _, err := conn.Exec(ctx, `INSERT INTO runs (id, created_at, updated_at, scenario, profile, status, config) VALUES ($1, 1, 1, 's', 'p', 'passed', $2)`,
			r.id, []byte(r.config)); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)

	db := openAt(t, dsn, defaultOptions())
	want := map[string]string{"run_named": "wl_named", "run_scenario": "", "run_garbled": ""}
	for _, id := range []string{"run_inline", "run_named", "run_scenario", "run_garbled"} {
		r, _, err := db.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if id != "run_garbled" && bytes.Contains(r.Config, []byte(`"workload":`)) {
			t.Errorf("%s still holds its workload: %s", id, r.Config)
		}
		if w, ok := want[id]; ok && r.WorkloadID != w {
			t.Errorf("%s names workload %q, want %q", id, r.WorkloadID, w)
		}
		if id == "run_inline" || id == "run_named" {
			w, err := db.GetWorkload(ctx, r.WorkloadID)
			if err != nil || w.Turns != 1 || w.Source != "hand" {
				t.Fatalf("%s's workload, stored as %q: %+v %v", id, r.WorkloadID, w, err)
			}
		}
	}
}
