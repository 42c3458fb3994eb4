package rollout

import (
	"fmt"
	"runtime"

	"agentloop/internal/hostcpu"
)

// How busy the machine was with other work while a race ran: the measured
// part of a race (the engine's work, the client, the tools) moves when
// other processes take the CPU, so every result says when they did.

// BusyShare is the share of each core, on average over the race, that other
// processes must have used for the result to warn that the machine was busy
// enough to move the measured part.
const BusyShare = 0.25

// MachineLoad is the CPU that processes other than this one used during a
// race (hostcpu: the machine's busy time and steal from /proc/stat, less
// this process's and its waited children's: the engine when it runs here,
// the client, the tools), as a share of every core over the race.
type MachineLoad struct {
	Cores int `json:"cores"`
	// OtherShare is the share of the machine's cores others kept busy:
	// 0.5 = half of every core, on average.
	OtherShare float64 `json:"other_share"`
}

// probe is the machine's CPU when a race started; nil where /proc is not.
type probe struct{ start hostcpu.Sample }

// loadProbe starts reading the machine's load.
func loadProbe() *probe {
	s := hostcpu.Read()
	if !s.HaveMachine {
		return nil
	}
	return &probe{start: s}
}

// end is the load since the probe started, nil without /proc or when no
// tick passed.
func (p *probe) end() *MachineLoad {
	if p == nil {
		return nil
	}
	a, b := p.start, hostcpu.Read()
	all := (b.All - a.All) + (b.Steal - a.Steal)
	if !b.HaveMachine || all <= 0 {
		return nil
	}
	other := (b.Busy - a.Busy) + (b.Steal - a.Steal) - (b.Self - a.Self) - (b.Children - a.Children)
	return &MachineLoad{Cores: runtime.NumCPU(), OtherShare: min(1, max(0, other/all))}
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
