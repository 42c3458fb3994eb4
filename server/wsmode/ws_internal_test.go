package wsmode

import (
	"testing"
	"time"
)

func TestLifetimeText(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{60 * time.Minute, "60 minutes"},
		{90 * time.Minute, "90 minutes"},
		{time.Minute, "1 minute"},
		{2 * time.Minute, "2 minutes"},
		{90 * time.Second, "1m30s"},
		{300 * time.Millisecond, "300ms"},
	} {
		if got := lifetimeText(tc.d); got != tc.want {
			t.Errorf("lifetimeText(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
