package scope

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"agentloop/api"
)

// Registry bounds.
const (
	maxScopes    = 256
	maxTraces    = 4096
	maxToolTurns = 1000
	maxAge       = 24 * time.Hour
)

// Scopes is the process's registry of created scopes.
type Scopes struct {
	mu    sync.Mutex
	byID  map[string]*api.Scope
	order []string // ids, oldest first
	now   func() time.Time
}

// New returns an empty registry.
func New() *Scopes { return &Scopes{byID: map[string]*api.Scope{}, now: time.Now} }

// Check validates a spec: errors name the parameter.
func Check(s api.ScopeSpec) *api.Error {
	if s.ToolTurns < 0 || s.ToolTurns > maxToolTurns {
		return api.BadRequest("tool_turns", api.CodeInvalidValue, "tool_turns must be between 0 and %d.", maxToolTurns)
	}
	return nil
}

// Create makes a scope for owner (request.ClientIdentity).
func (s *Scopes) Create(spec api.ScopeSpec, owner string) (api.Scope, *api.Error) {
	if err := Check(spec); err != nil {
		return api.Scope{}, err
	}
	var b [9]byte
	_, _ = rand.Read(b[:])
	sc := &api.Scope{ID: "scope_" + hex.EncodeToString(b[:]), Object: "scope", ScopeSpec: spec, Owner: owner,
		CreatedUnixNS: s.now().UnixNano(), Traces: []api.Trace{}}
	sc.Path = api.ScopePath(sc.ID)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	if len(s.order) >= maxScopes {
		delete(s.byID, s.order[0])
		s.order = s.order[1:]
	}
	s.byID[sc.ID] = sc
	s.order = append(s.order, sc.ID)
	return copyScope(sc), nil
}

// expireLocked forgets the scopes older than maxAge. Callers hold mu.
func (s *Scopes) expireLocked() {
	cut := s.now().Add(-maxAge).UnixNano()
	for len(s.order) > 0 && s.byID[s.order[0]].CreatedUnixNS < cut {
		delete(s.byID, s.order[0])
		s.order = s.order[1:]
	}
}

// Get returns owner's scope id with its traces.
func (s *Scopes) Get(id, owner string) (api.Scope, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.byID[id]
	if !ok || sc.Owner != owner {
		return api.Scope{}, false
	}
	return copyScope(sc), true
}

// Delete forgets owner's scope id.
func (s *Scopes) Delete(id, owner string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.byID[id]
	if !ok || sc.Owner != owner {
		return false
	}
	delete(s.byID, id)
	s.order = slices.DeleteFunc(s.order, func(x string) bool { return x == id })
	return true
}

// ToolTurns is scope id's K (0 for a scope not created here): the
// engine's core.Shared.ToolTurns.
func (s *Scopes) ToolTurns(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc, ok := s.byID[id]; ok {
		return sc.ToolTurns
	}
	return 0
}

func copyScope(sc *api.Scope) api.Scope {
	c := *sc
	c.Traces = slices.Clone(sc.Traces)
	return c
}

// Enter counts a request or a WebSocket connection on scope id's mount
// (api.Scope.InFlight) until leave is called, after its trace was kept;
// a scope not created here counts nothing.
func (s *Scopes) Enter(id string) (leave func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.byID[id]
	if !ok {
		return func() {}
	}
	sc.InFlight++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			sc.InFlight--
		})
	}
}

// ObserveTrace keeps a trace of a created scope. It holds the lock for an
// append only, so it never blocks the request that hands it over.
func (s *Scopes) ObserveTrace(t *api.Trace) {
	if t.Scope == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.byID[t.Scope]
	if !ok {
		return
	}
	if len(sc.Traces) >= maxTraces {
		sc.Traces = slices.Delete(sc.Traces, 0, 1)
		sc.TracesDropped++
	}
	sc.Traces = append(sc.Traces, *t)
}

// ObserveOpen and ObserveClose complete core.Observer: a scope keeps
// traces only.
func (s *Scopes) ObserveOpen(string)  {}
func (s *Scopes) ObserveClose(string) {}
