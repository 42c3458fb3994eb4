package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestCheckRefusesWithoutAClientOrWithAnUnknownCheck: the command says
// what is missing before it starts an engine.
func TestCheckRefusesWithoutAClientOrWithAnUnknownCheck(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check"}, "no client command"},
		{[]string{"check", "--checks", "nope", "--", "true"}, "unknown check"},
		{[]string{"check", "--upgrade-status", "500", "--", "true"}, "426, 405 or 404"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), c.args, func(string) string { return "" }, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}
