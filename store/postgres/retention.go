package postgres

import (
	"context"
	"time"

	"agentloop/store"
	"agentloop/store/internal/sqlstore"
)

// traceSweep deletes traces with the other records retention sweeps; only
// PostgreSQL keeps them, for replicas. Autovacuum reclaims the space.
var traceSweep = sqlstore.Sweep{
	What: "traces",
	Select: `SELECT response_id FROM traces WHERE started_unix_ns < $1
		ORDER BY started_unix_ns LIMIT $2`,
	Cutoff: time.Time.UnixNano,
	Delete: func(ctx context.Context, c sqlstore.Conn, id string) error {
		_, err := c.Exec(ctx, `DELETE FROM traces WHERE response_id = $1`, id)
		return err
	},
	Count: func(s *store.Swept) *int { return &s.Traces },
}
