package hostcpu

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sample is the machine's CPU time and this process's at one moment, in
// seconds summed over cores.
type Sample struct {
	At    time.Time
	Busy  float64 // every process: all but idle and iowait (steal aside)
	All   float64 // Busy with idle and iowait
	Steal float64 // the hypervisor ran something else on our cores
	// Self is this process's CPU time; Children that of the children it
	// waited for (a race's tools).
	Self, Children float64
	HaveMachine    bool // /proc/stat was read
}

// Read samples the machine and this process now.
func Read() Sample {
	s := Sample{At: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.Self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		s.Children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := strings.Cut(string(b), "\n")
	s.Busy, s.All, s.Steal, s.HaveMachine = ParseCPULine(line)
	return s
}

// ParseCPULine reads /proc/stat's first line (the machine's "cpu" totals,
// in USER_HZ ticks) as seconds: busy (all but idle and iowait), all (busy
// with idle and iowait) and steal (the hypervisor's, in neither).
func ParseCPULine(line string) (busy, all, steal float64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, 0, false
	}
	const hz = 100 // USER_HZ on Linux
	for i, s := range f[1:] {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, 0, 0, false
		}
		if i == 7 {
			steal = v / hz
		}
		if i >= 7 { // steal is not ours to use; guest time is already counted in user
			break
		}
		all += v / hz
		if i != 3 && i != 4 { // idle, iowait
			busy += v / hz
		}
	}
	return busy, all, steal, true
}
