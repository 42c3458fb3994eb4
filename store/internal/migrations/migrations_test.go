package migrations

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadOrdersByVersionAndRefusesBadNames(t *testing.T) {
	ms, err := Load(fstest.MapFS{
		"m/0010_later.sql": {Data: []byte("B")},
		"m/0002_first.sql": {Data: []byte("A")},
		"m/README":         {Data: []byte("not a step")},
	}, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Version != 2 || ms[0].SQL != "A" || ms[1].Name != "0010_later.sql" {
		t.Fatalf("loaded %+v", ms)
	}
	for name, files := range map[string]fstest.MapFS{
		"no version":   {"m/init.sql": {}},
		"zero":         {"m/0000_x.sql": {}},
		"same version": {"m/0001_a.sql": {}, "m/01_b.sql": {}},
	} {
		if _, err := Load(files, "m"); err == nil || !strings.Contains(err.Error(), "migration") {
			t.Errorf("%s: %v, want an error naming the migration", name, err)
		}
	}
}
