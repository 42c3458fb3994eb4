package drill

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"agentloop/api"

	"github.com/prometheus/client_golang/prometheus"
)

// Drill limits.
const (
	defaultDrillHold = 2 * time.Second // stall and slow-first-token
	defaultRetryHint = time.Second     // Retry-After of http-429 and http-503
	maxDrillHold     = 10 * time.Minute
	// maxDrillLifetime bounds after_ms: the default --ws-lifetime.
	maxDrillLifetime = 60 * time.Minute
	maxDrillTimes    = 1_000_000
	maxDrillAfter    = 1_000_000
	maxDrillScope    = 256
	maxDrillsArmed   = 256
	maxDrillFirings  = 100 // per drill; older ones are dropped, Fired still counts them
	// maxDrillSessions bounds the per-session counters: past it the oldest
	// session's count is forgotten (it starts again from 0).
	maxDrillSessions = 10_000
)

// drillHook is where in the engine a drill acts.
type drillHook int

const (
	hookUpgrade drillHook = iota
	hookEvict
	hookWSCreate
	hookHTTPCreate
	hookStream
)

func hookOf(name string) drillHook {
	switch name {
	case api.DrillRefuseUpgrade:
		return hookUpgrade
	case api.DrillEvictCache:
		return hookEvict
	case api.DrillConnectionLimit:
		return hookWSCreate
	case api.DrillHTTP429, api.DrillHTTP503:
		return hookHTTPCreate
	}
	return hookStream
}

// drillTakesDuration says whether duration_ms means something for a
// drill: how long stall and slow-first-token hold the stream, or the retry
// hint of http-429 and http-503.
func drillTakesDuration(name string) bool {
	switch name {
	case api.DrillStall, api.DrillSlowFirstToken, api.DrillHTTP429, api.DrillHTTP503:
		return true
	}
	return false
}

// Check validates a spec and fills its defaults (times 1, and the
// duration of the drills that take one). Errors name the parameter.
func Check(s *api.DrillSpec) *api.Error {
	if !slices.Contains(api.DrillNames, s.Drill) {
		if s.Drill == "" {
			return api.BadRequest("drill", api.CodeMissingRequiredParameter, "Missing required parameter: 'drill'.")
		}
		return api.BadRequest("drill", api.CodeInvalidValue, "Invalid value: '%s'. Supported drills are: %s.", s.Drill, drillList())
	}
	if s.AfterTurns < 0 || s.AfterTurns > maxDrillAfter {
		return api.BadRequest("after_turns", api.CodeInvalidValue, "after_turns must be between 0 and %d.", maxDrillAfter)
	}
	if s.Times == 0 {
		s.Times = 1
	}
	if s.Times < 1 || s.Times > maxDrillTimes {
		return api.BadRequest("times", api.CodeInvalidValue, "times must be between 1 and %d (leave it out for 1).", maxDrillTimes)
	}
	switch {
	case s.DurationMS != 0 && !drillTakesDuration(s.Drill):
		return api.BadRequest("duration_ms", api.CodeUnsupportedParameter, "duration_ms applies to stall, slow-first-token, http-429 and http-503 only.")
	case s.DurationMS < 0 || time.Duration(s.DurationMS)*time.Millisecond > maxDrillHold:
		return api.BadRequest("duration_ms", api.CodeInvalidValue, "duration_ms must be between 1 and %d.", maxDrillHold.Milliseconds())
	case s.DurationMS == 0 && drillTakesDuration(s.Drill):
		s.DurationMS = defaultDrillHold.Milliseconds()
		if hookOf(s.Drill) == hookHTTPCreate {
			s.DurationMS = defaultRetryHint.Milliseconds()
		}
	}
	if err := checkAfterMS(s); err != nil {
		return err
	}
	switch {
	case s.Status != 0 && s.Drill != api.DrillRefuseUpgrade:
		return api.BadRequest("status", api.CodeUnsupportedParameter, "status applies to refuse-upgrade only.")
	case s.Status != 0 && s.Status != http.StatusUpgradeRequired && s.Status != http.StatusMethodNotAllowed && s.Status != http.StatusNotFound:
		return api.BadRequest("status", api.CodeInvalidValue, "status must be 426, 405 or 404.")
	}
	if s.Scope != "" && strings.TrimSpace(s.Scope) == "" {
		return emptyScope()
	}
	if len(s.Scope) > maxDrillScope {
		return api.BadRequest("scope", api.CodeInvalidValue, "scope is at most %d bytes.", maxDrillScope)
	}
	return nil
}

// checkAfterMS holds after_ms, connection-limit's time form, to its
// range; it replaces after_turns, so the two are not given together.
func checkAfterMS(s *api.DrillSpec) *api.Error {
	switch {
	case s.AfterMS == 0:
		return nil
	case s.Drill != api.DrillConnectionLimit:
		return api.BadRequest("after_ms", api.CodeUnsupportedParameter, "after_ms applies to connection-limit only.")
	case s.AfterMS < 0 || s.AfterMS > maxDrillLifetime.Milliseconds():
		return afterMSRange()
	case s.AfterTurns != 0:
		return api.BadRequest("after_ms", api.CodeInvalidValue, "Give after_ms or after_turns, not both: after_ms limits a connection by time, after_turns at a create.")
	}
	return nil
}

func afterMSRange() *api.Error {
	return api.BadRequest("after_ms", api.CodeInvalidValue, "after_ms must be between 1 and %d.", maxDrillLifetime.Milliseconds())
}

// emptyScope refuses a scope given empty: leaving it out is how a drill
// applies to the whole server.
func emptyScope() *api.Error {
	return api.BadRequest("scope", api.CodeInvalidValue, "scope is empty; leave it out for a drill on the whole server, or name the scope (the X-Agentloop-Scope header's value).")
}

func drillList() string {
	s := ""
	for i, n := range api.DrillNames {
		if i > 0 {
			s += ", "
		}
		s += "'" + n + "'"
	}
	return s
}

// Drills is the server's registry of armed drills.
type Drills struct {
	// live counts drills that can still fire: while it is 0 every hook
	// returns at once and no session is counted.
	live atomic.Int32

	mu    sync.Mutex
	armed []*api.Drill
	seq   int
	// counts are each live drill's own counts, by drill id, from its
	// arming: responses finished per session, upgrade attempts per scope.
	counts map[string]*drillCount
	fired  *prometheus.CounterVec
}

// drillCount is one drill's count per session since it was armed.
type drillCount struct {
	n     map[string]int
	order []string // the sessions in the order first counted, to bound the map
}

func (c *drillCount) add(key string) {
	if _, ok := c.n[key]; !ok {
		if len(c.order) >= maxDrillSessions {
			delete(c.n, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, key)
	}
	c.n[key]++
}

// NewDrills returns an empty registry whose firings reg counts (nil: not
// counted), labelled with the replica like every metric of the engine.
func NewDrills(reg prometheus.Registerer, replica string) *Drills {
	d := &Drills{counts: map[string]*drillCount{},
		fired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentloop_drill_firings_total",
			Help: "Fault drills fired, by drill."}, []string{"drill"})}
	if reg != nil {
		if replica != "" {
			reg = prometheus.WrapRegistererWith(prometheus.Labels{"replica": replica}, reg)
		}
		reg.MustRegister(d.fired)
	}
	return d
}

// Arm checks a spec and arms it.
func (d *Drills) Arm(s api.DrillSpec) (api.Drill, *api.Error) {
	if err := Check(&s); err != nil {
		return api.Drill{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.armed) >= maxDrillsArmed {
		return api.Drill{}, api.BadRequest("", api.CodeTooManyDrills, "At most %d drills can be armed; disarm some first.", maxDrillsArmed)
	}
	d.seq++
	dr := &api.Drill{ID: "drill_" + strconv.Itoa(d.seq), Object: "drill", DrillSpec: s, ArmedAt: time.Now().Unix(),
		Firings: []api.DrillFiring{}}
	d.armed = append(d.armed, dr)
	d.counts[dr.ID] = &drillCount{n: map[string]int{}}
	d.live.Add(1)
	return copyDrill(dr), nil
}

// List returns the armed drills, oldest first, with their firings.
func (d *Drills) List() []api.Drill {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]api.Drill, len(d.armed))
	for i, dr := range d.armed {
		out[i] = copyDrill(dr)
	}
	return out
}

// Get returns one armed drill.
func (d *Drills) Get(id string) (api.Drill, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dr := range d.armed {
		if dr.ID == id {
			return copyDrill(dr), true
		}
	}
	return api.Drill{}, false
}

// Disarm removes a drill; false if there is none with that id.
func (d *Drills) Disarm(id string) (api.Drill, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, dr := range d.armed {
		if dr.ID == id {
			if dr.Fired < dr.Times {
				d.setLive(-1)
			}
			delete(d.counts, dr.ID)
			d.armed = slices.Delete(d.armed, i, i+1)
			return copyDrill(dr), true
		}
	}
	return api.Drill{}, false
}

func copyDrill(dr *api.Drill) api.Drill {
	c := *dr
	c.Firings = slices.Clone(dr.Firings)
	return c
}

// setLive moves the count of drills that can fire. Callers hold mu.
func (d *Drills) setLive(delta int32) { d.live.Add(delta) }

// idle says no drill can fire: the hooks' fast path, one atomic load.
func (d *Drills) idle() bool { return d == nil || d.live.Load() == 0 }

// finished counts a response the engine finished in a session.
func (d *Drills) finished(session string) {
	if d.idle() || session == "" {
		return
	}
	d.mu.Lock()
	d.countLocked(session)
	d.mu.Unlock()
}

// countLocked counts key for every drill that can still fire.
func (d *Drills) countLocked(key string) {
	for _, c := range d.counts {
		c.add(key)
	}
}

// fire fires the first armed drill of hook that matches the scope and
// whose after_turns the session has reached, and records the firing. It
// returns the drill, or nil.
func (d *Drills) fire(hook drillHook, session, scope string, f api.DrillFiring) *api.Drill {
	if d.idle() {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	key := session
	if hook == hookUpgrade {
		key = "upgrade:" + scope
		defer d.countLocked(key) // this attempt counts for the next one
	}
	for _, dr := range d.armed {
		if hookOf(dr.Drill) != hook || dr.AfterMS > 0 || dr.Fired >= dr.Times || (dr.Scope != "" && dr.Scope != scope) ||
			d.counts[dr.ID].n[key] < dr.AfterTurns {
			continue
		}
		d.recordLocked(dr, f)
		c := *dr
		return &c
	}
	return nil
}

// recordLocked counts a firing of dr and records it. Callers hold mu.
func (d *Drills) recordLocked(dr *api.Drill, f api.DrillFiring) {
	dr.Fired++
	if dr.Fired == dr.Times {
		d.setLive(-1)
		delete(d.counts, dr.ID) // spent: it counts no more
	}
	f.AtUnixNS = time.Now().UnixNano()
	if len(dr.Firings) >= maxDrillFirings {
		dr.Firings = slices.Delete(dr.Firings, 0, 1)
	}
	dr.Firings = append(dr.Firings, f)
	d.fired.WithLabelValues(dr.Drill).Inc()
}

// drillError marks an error a drill caused, for clients and tests.
func drillError(err *api.Error, drill string) *api.Error {
	if err.Headers == nil {
		err.Headers = map[string]string{}
	}
	err.Headers[api.HeaderDrill] = drill
	return err
}
