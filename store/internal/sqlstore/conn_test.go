package sqlstore

import "testing"

func TestRebind(t *testing.T) {
	cases := []struct {
		numbered    bool
		query, want string
	}{
		{false, `SELECT 1 FROM runs WHERE id = ? AND status = ?`, `SELECT 1 FROM runs WHERE id = ? AND status = ?`},
		{true, `SELECT 1 FROM runs WHERE id = ? AND status = ?`, `SELECT 1 FROM runs WHERE id = $1 AND status = $2`},
		{true, `VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, `VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`},
		{true, `UPDATE lanes SET status = 'interrupted'`, `UPDATE lanes SET status = 'interrupted'`},
		{true, `?`, `$1`},
	}
	for _, c := range cases {
		if got := (Dialect{Numbered: c.numbered}).Rebind(c.query); got != c.want {
			t.Errorf("Rebind(%q, numbered %v) = %q, want %q", c.query, c.numbered, got, c.want)
		}
	}
}
