package rollout

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// How busy the machine was with other work while a race ran: the measured
// part of a race (the engine's work, the client, the tools) moves when
// other processes take the CPU, so every result says when they did.

// BusyShare is the share of each core, on average over the race, that other
// processes must have used for the result to warn that the machine was busy
// enough to move the measured part.
const BusyShare = 0.25

// MachineLoad is the CPU that processes other than this one used during a
// race, read from /proc/stat (all CPU time) less /proc/self/stat (this
// process and the children it waited for: the engine when it runs here,
// the client, the tools), as a share of every core over the race's wall
// time.
type MachineLoad struct {
	Cores int `json:"cores"`
	// OtherShare is the share of the machine's cores others kept busy:
	// 0.5 = half of every core, on average.
	OtherShare float64 `json:"other_share"`
}

// cpuTicks are the machine's busy ticks (all cores) and this process's.
type cpuTicks struct{ busy, total, self int64 }

// loadProbe starts reading the machine's load; nil where /proc is not.
func loadProbe() *cpuTicks {
	t, ok := readTicks()
	if !ok {
		return nil
	}
	return &t
}

// end is the load since the probe started, nil without /proc or when no
// tick passed.
func (p *cpuTicks) end() *MachineLoad {
	if p == nil {
		return nil
	}
	t, ok := readTicks()
	if !ok || t.total <= p.total {
		return nil
	}
	other := (t.busy - p.busy) - (t.self - p.self)
	share := max(0, float64(other)/float64(t.total-p.total))
	return &MachineLoad{Cores: runtime.NumCPU(), OtherShare: share}
}

// readTicks reads /proc/stat's "cpu" line (user nice system idle iowait
// irq softirq steal …, in clock ticks over all cores) and /proc/self/stat's
// utime, stime, cutime and cstime (fields 14–17, in the same ticks).
func readTicks() (cpuTicks, bool) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTicks{}, false
	}
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTicks{}, false
	}
	var t cpuTicks
	for i, v := range f[1:9] { // guest time is already in user
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cpuTicks{}, false
		}
		t.total += n
		if i != 3 && i != 4 { // idle, iowait
			t.busy += n
		}
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return cpuTicks{}, false
	}
	// The command name (field 2) may hold spaces; the fields after it
	// start past its closing parenthesis, at field 3.
	i := bytes.LastIndexByte(self, ')')
	if i < 0 {
		return cpuTicks{}, false
	}
	sf := strings.Fields(string(self[i+1:]))
	if len(sf) < 15 {
		return cpuTicks{}, false
	}
	for _, v := range sf[11:15] { // fields 14–17
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cpuTicks{}, false
		}
		t.self += n
	}
	return t, true
}

// busySentence warns when others kept the machine busy enough to move the
// measured part, and says how that is judged; "" when they did not, or
// when the load was not read.
func busySentence(l *MachineLoad, repeats int) string {
	if l == nil || l.OtherShare < BusyShare {
		return ""
	}
	spread := "Run it again when the machine is quieter, or with repeats, whose spread shows how far the load moved it."
	if repeats > 1 {
		spread = "The spread of the repeats shows how far it moved."
	}
	return fmt.Sprintf("The machine was busy: other processes kept its %d cores %d%% busy on average during the race (read from /proc/stat; the warning starts at %d%%), enough to move the measured part. %s",
		l.Cores, pct(l.OtherShare), pct(BusyShare), spread)
}
