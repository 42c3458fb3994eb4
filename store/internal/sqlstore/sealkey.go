package sqlstore

import (
	"context"
	"errors"
	"time"
)

// SealKey returns the stored seal key, storing fresh first when there is
// none: the first caller's key is every caller's, however many replicas
// ask at once (the insert does nothing when a key is stored, and the read
// after it sees the one that was).
func (s *Store) SealKey(ctx context.Context, fresh []byte) ([]byte, error) {
	if len(fresh) == 0 {
		return nil, errors.New("store: seal key: empty fresh key")
	}
	var key []byte
	err := s.c.Write(ctx, func(c Conn) error {
		if _, err := c.Exec(ctx, s.q(`INSERT INTO seal_key (id, key, created_at) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING`),
			fresh, time.Now().UnixNano()); err != nil {
			return err
		}
		return c.QueryRow(ctx, s.q(`SELECT key FROM seal_key WHERE id = 1`)).Scan(&key)
	})
	if err != nil {
		return nil, wrap("seal key", err)
	}
	return key, nil
}
