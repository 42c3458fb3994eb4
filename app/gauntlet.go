package app

import (
	"agentloop/api"
	"agentloop/server"
)

// gauntlet is web.Gauntlet over the engine's scopes and drills: /check
// arms a check for a client pointed at the server by hand and grades what
// the engine saw.
type gauntlet struct{ sh *server.Shared }

func (g gauntlet) CreateScope(spec api.ScopeSpec, owner string) (api.Scope, *api.Error) {
	return g.sh.Scopes.Create(spec, owner)
}

func (g gauntlet) Scope(id, owner string) (api.Scope, bool) { return g.sh.Scopes.Get(id, owner) }

func (g gauntlet) ArmDrill(spec api.DrillSpec) (api.Drill, *api.Error) { return g.sh.Drills.Arm(spec) }

func (g gauntlet) Drill(id string) (api.Drill, bool) { return g.sh.Drills.Get(id) }

func (g gauntlet) DisarmDrill(id string) { g.sh.Drills.Disarm(id) }
