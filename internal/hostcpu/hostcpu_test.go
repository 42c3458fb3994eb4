package hostcpu

import (
	"math"
	"testing"
)

// The line's fields: user nice system idle iowait irq softirq steal guest
// guest_nice, in ticks of 1/100 s.
func TestParseCPULineSplitsBusyIdleAndSteal(t *testing.T) {
	busy, all, steal, ok := ParseCPULine("cpu  2140034 63975 408139 1976720 10386 0 47023 85134 0 0")
	if !ok {
		t.Fatal("not parsed")
	}
	const wantBusy = (2140034 + 63975 + 408139 + 0 + 47023) / 100.0
	const wantAll = wantBusy + (1976720+10386)/100.0
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	if !near(busy, wantBusy) || !near(all, wantAll) || !near(steal, 851.34) {
		t.Fatalf("busy %v all %v steal %v, want %v %v 851.34", busy, all, steal, wantBusy, wantAll)
	}
	for _, bad := range []string{"", "intr 1 2 3 4 5", "cpu 1 2 x 4 5"} {
		if _, _, _, ok := ParseCPULine(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}
