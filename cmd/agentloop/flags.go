package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/apistack"
	"agentloop/rollout"
	"agentloop/server/drill"
)

var errHelp = errors.New("help requested")

type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if errors.Is(err, errHelp) {
		return 0
	}
	return 1
}

// parseFlags parses args, then fills every flag not given on the command
// line from its AGENTLOOP_ environment variable.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		env := envName(f.Name)
		if v := getenv(env); v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %w", env, v, e)
			}
		}
	})
	return err
}

func envName(flagName string) string {
	return "AGENTLOOP_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// byteSize is a flag like "32MiB", "16MB", "65536".
type byteSize struct{ n *int64 }

func (b byteSize) String() string {
	if b.n == nil {
		return ""
	}
	n := *b.n
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprint(n)
}

func (b byteSize) Set(s string) error {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.m
			break
		}
	}
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
		return fmt.Errorf("not a positive size: %q", s)
	}
	*b.n = n * mult
	return nil
}

// listFlag is a comma-separated list.
type listFlag struct{ v *[]string }

func (l listFlag) String() string {
	if l.v == nil {
		return ""
	}
	return strings.Join(*l.v, ",")
}

func (l listFlag) Set(s string) error {
	*l.v = nil
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l.v = append(*l.v, p)
		}
	}
	return nil
}

// stackFlag is a modelled API stack: a preset's name or a JSON object of
// parameters.
type stackFlag struct{ s *apistack.Stack }

func (f stackFlag) String() string {
	if f.s == nil {
		return ""
	}
	return f.s.String()
}

func (f stackFlag) Set(v string) error {
	s, err := apistack.Parse(v, apistack.Lean, "stack")
	if err != nil {
		return errors.New(err.Message)
	}
	*f.s = s
	return nil
}

// drillFlag arms a fault drill at start: NAME[:after=N][:times=K][:for=DURATION][:lifetime=DURATION][:scope=S][:status=N].
// It is repeatable; one value (the environment variable's) may hold
// several, comma-separated.
type drillFlag struct{ v *[]api.DrillSpec }

func (f drillFlag) String() string {
	if f.v == nil {
		return ""
	}
	var parts []string
	for _, s := range *f.v {
		parts = append(parts, formatDrill(s))
	}
	return strings.Join(parts, ",")
}

func (f drillFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		s, err := parseDrill(p)
		if err != nil {
			return err
		}
		*f.v = append(*f.v, s)
	}
	return nil
}

// parseDrill reads one --drill value and checks it as POST /api/drills does.
func parseDrill(v string) (api.DrillSpec, error) {
	parts := strings.Split(v, ":")
	s := api.DrillSpec{Drill: strings.TrimSpace(parts[0])}
	seen := map[string]bool{}
	for _, p := range parts[1:] {
		key, val, ok := strings.Cut(p, "=")
		key = strings.TrimSpace(key)
		if !ok || seen[key] {
			return s, fmt.Errorf("drill %q: want NAME[:after=N][:times=K][:for=DURATION][:lifetime=DURATION][:scope=S][:status=N], each option once", v)
		}
		seen[key] = true
		var err error
		switch key {
		case "after":
			s.AfterTurns, err = strconv.Atoi(strings.TrimSpace(val))
		case "times":
			s.Times, err = strconv.Atoi(strings.TrimSpace(val))
			if err == nil && s.Times < 1 {
				err = errors.New("must be 1 or more")
			}
		case "for":
			var d time.Duration
			d, err = time.ParseDuration(strings.TrimSpace(val))
			if err == nil && d < time.Millisecond {
				err = errors.New("must be at least 1ms")
			}
			s.DurationMS = d.Milliseconds()
		case "lifetime": // connection-limit's after_ms
			var d time.Duration
			d, err = time.ParseDuration(strings.TrimSpace(val))
			if err == nil && d < time.Millisecond {
				err = errors.New("must be at least 1ms")
			}
			s.AfterMS = d.Milliseconds()
		case "status": // refuse-upgrade's answer: 426, 405 or 404
			s.Status, err = strconv.Atoi(strings.TrimSpace(val))
		case "scope":
			s.Scope = val
			if strings.TrimSpace(val) == "" {
				err = errors.New("is empty; leave it out for a drill on the whole server")
			}
		default:
			return s, fmt.Errorf("drill %q: unknown option %q (after, times, for, lifetime, scope, status)", v, key)
		}
		if err != nil {
			return s, fmt.Errorf("drill %q: %s: %v", v, key, err)
		}
	}
	if aerr := drill.Check(&s); aerr != nil {
		return s, fmt.Errorf("drill %q: %s", v, aerr.Message)
	}
	return s, nil
}

// laneDrillFlag is race's --drill: LANE:NAME[:after=N][:times=K][:for=DURATION][:lifetime=DURATION],
// repeatable. The part after the lane is serve's --drill, read by the same
// parser; the scope is the lane's, so it takes none.
type laneDrillFlag struct{ v *[]rollout.LaneDrill }

func (f laneDrillFlag) String() string {
	if f.v == nil {
		return ""
	}
	var parts []string
	for _, d := range *f.v {
		parts = append(parts, d.Lane+":"+formatDrill(api.DrillSpec{Drill: d.Drill, AfterTurns: d.AfterTurns, Times: d.Times, DurationMS: d.DurationMS, AfterMS: d.AfterMS}))
	}
	return strings.Join(parts, ",")
}

func (f laneDrillFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		d, err := parseLaneDrill(p)
		if err != nil {
			return err
		}
		*f.v = append(*f.v, d)
	}
	return nil
}

// parseLaneDrill reads one race --drill value. Whether the lane is raced
// and takes the drill is checked with the rest of the race's config.
func parseLaneDrill(v string) (rollout.LaneDrill, error) {
	lane, spec, ok := strings.Cut(v, ":")
	lane = strings.TrimSpace(lane)
	if !ok || lane == "" || strings.Contains(lane, "=") {
		return rollout.LaneDrill{}, fmt.Errorf("drill %q: want LANE:NAME[:after=N][:times=K][:for=DURATION][:lifetime=DURATION], e.g. ws:evict-cache:after=2", v)
	}
	s, err := parseDrill(spec)
	if err != nil {
		return rollout.LaneDrill{}, fmt.Errorf("lane %s: %w", lane, err)
	}
	if s.Scope != "" {
		return rollout.LaneDrill{}, fmt.Errorf("drill %q: a race scopes each drill to its lane; leave out scope", v)
	}
	if s.Status != 0 {
		return rollout.LaneDrill{}, fmt.Errorf("drill %q: a race refuses upgrades with 426; leave out status", v)
	}
	return rollout.LaneDrill{Drill: s.Drill, Lane: lane, AfterTurns: s.AfterTurns, Times: s.Times, DurationMS: s.DurationMS, AfterMS: s.AfterMS}, nil
}

func formatDrill(s api.DrillSpec) string {
	out := s.Drill + ":after=" + strconv.Itoa(s.AfterTurns) + ":times=" + strconv.Itoa(s.Times)
	if s.DurationMS > 0 {
		out += ":for=" + (time.Duration(s.DurationMS) * time.Millisecond).String()
	}
	if s.AfterMS > 0 {
		out += ":lifetime=" + (time.Duration(s.AfterMS) * time.Millisecond).String()
	}
	if s.Status != 0 {
		out += ":status=" + strconv.Itoa(s.Status)
	}
	if s.Scope != "" {
		out += ":scope=" + s.Scope
	}
	return out
}
