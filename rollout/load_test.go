package rollout

import (
	"os"
	"strings"
	"testing"
)

// TestMachineLoadReadsProc: where /proc is, a probe reads the machine's and
// this process's ticks, and what others used is a share of the machine
// between 0 and 1 once some work has passed.
func TestMachineLoadReadsProc(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat here")
	}
	p := loadProbe()
	if p == nil || p.start.All <= 0 || p.start.Busy <= 0 || p.start.Busy > p.start.All || p.start.Self <= 0 {
		t.Fatalf("probe %+v", p)
	}
	var l *MachineLoad
	for x := 0; l == nil; x++ { // burn this process's CPU until a tick passes
		_ = strings.Repeat("x", x%4096)
		l = p.end()
	}
	if l.Cores < 1 || l.OtherShare < 0 || l.OtherShare > 1 {
		t.Errorf("load %+v", l)
	}
}

// TestBusySentence: a result warns only past BusyShare, and says how the
// load is judged; with repeats it points at their spread.
func TestBusySentence(t *testing.T) {
	if got := busySentence(nil, 3); got != "" {
		t.Errorf("no load read: %q", got)
	}
	if got := busySentence(&MachineLoad{Cores: 2, OtherShare: BusyShare - 0.01}, 3); got != "" {
		t.Errorf("a quiet machine: %q", got)
	}
	want := "The machine was busy: other processes kept its 2 cores 64% busy on average during the race (read from /proc/stat; the warning starts at 25%), enough to move the measured part. The spread of the repeats shows how far it moved."
	if got := busySentence(&MachineLoad{Cores: 2, OtherShare: 0.64}, 3); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := busySentence(&MachineLoad{Cores: 2, OtherShare: 0.64}, 1); !strings.HasSuffix(got, "or with repeats, whose spread shows how far the load moved it.") {
		t.Errorf("one repeat: %q", got)
	}
}
