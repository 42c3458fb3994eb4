// Package migrations reads a backend's embedded schema steps: files named
// by version and what they do (0001_init.sql) in a migrations directory,
// in version order, and refuses a database a newer binary migrated. Each
// backend keeps its own steps and applies them its own way.
package migrations

import (
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// Migration is one schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load returns the steps in dir of fsys in version order; a name without a
// positive version, or two steps with one version, is an error.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	seen := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		prefix, _, ok := strings.Cut(name, "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name must be NNNN_what.sql", name)
		}
		v, err := strconv.Atoi(prefix)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version", name)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		body, err := fs.ReadFile(fsys, dir+"/"+name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// CheckSchema fails when the database's newest applied version is past
// the last of ms: a newer binary wrote it, and this one must not touch it.
func CheckSchema(ms []Migration, newest int) error {
	if known := ms[len(ms)-1].Version; newest > known {
		return fmt.Errorf("database schema version %d is newer than this binary's %d", newest, known)
	}
	return nil
}
