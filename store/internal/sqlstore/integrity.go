package sqlstore

import (
	"context"
	"fmt"
	"strings"
)

// IntegrityCheck is one query of Store.IntegrityCheck. Problem reads one
// of its rows; "" means the row reports no problem.
type IntegrityCheck struct {
	Query   string
	Problem func(Row) (string, error)
}

// maxProblems is how many problems an integrity check names at the most.
const maxProblems = 20

// IntegrityCheck runs the backend's integrity checks on one snapshot and
// fails naming the first problems they find. It reads the whole database.
func (s *Store) IntegrityCheck(ctx context.Context) error {
	var problems []string
	err := s.c.Read(ctx, func(c Conn) error {
		for _, check := range s.c.IntegrityChecks {
			if err := s.runCheck(ctx, c, check, &problems); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: integrity check: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("store: integrity check failed: %s", strings.Join(problems, "; "))
	}
	return nil
}

func (s *Store) runCheck(ctx context.Context, c Conn, check IntegrityCheck, problems *[]string) error {
	rows, err := c.Query(ctx, check.Query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		line, err := check.Problem(rows)
		if err != nil {
			return err
		}
		if line != "" && len(*problems) < maxProblems {
			*problems = append(*problems, line)
		}
	}
	return rows.Err()
}
