package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"agentloop/api"
)

// LaneDrill is one fault drill of a race's schedule. It is armed on the
// engine before each repeat of its lane, scoped to that lane's requests
// (X-Agentloop-Scope), so it never fires on another lane, and disarmed
// after it. The turn it hit names it (Turn.Drills), as the engine named it
// on the error or in the response's trace.
type LaneDrill struct {
	Drill      string `json:"drill"`
	Lane       string `json:"lane"`
	AfterTurns int    `json:"after_turns"`
	Times      int    `json:"times,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
	// AfterMS is connection-limit's time form: the lane's connections
	// reach their limit this many milliseconds after they open.
	AfterMS int64 `json:"after_ms,omitempty"`
}

// maxRaceDrills bounds a race's schedule.
const maxRaceDrills = 32

// maxTimedLimitMS bounds a drill's after_ms in a race, as the engine
// bounds it when the drill is armed: the default --ws-lifetime.
const maxTimedLimitMS = 60 * 60 * 1000

// DrillLanes are the lanes each drill can hit: the WebSocket drills need
// the ws lane, the HTTP statuses an HTTP lane. The prototype lane takes
// none: its one long response has no recovery path. The race form says
// it next to each drill, and offers a valid pair first.
func DrillLanes(drill string) []string {
	httpLanes := []string{LaneHTTP, LaneHTTPOptimized, LaneHTTPChained}
	switch drill {
	case api.DrillEvictCache, api.DrillConnectionLimit, api.DrillRefuseUpgrade:
		return []string{LaneWS}
	case api.DrillHTTP429, api.DrillHTTP503:
		return httpLanes
	}
	return append(httpLanes, LaneWS)
}

// checkDrills validates the schedule against the race's lanes. The engine
// checks the rest (times, duration_ms) when the drill is armed.
func checkDrills(cfg *Config) *api.Error {
	if len(cfg.Drills) > maxRaceDrills {
		return api.BadRequest("drills", api.CodeInvalidValue, "A race takes at most %d drills.", maxRaceDrills)
	}
	for i, d := range cfg.Drills {
		param := fmt.Sprintf("drills[%d]", i)
		if !slices.Contains(api.DrillNames, d.Drill) {
			return api.BadRequest(param+".drill", api.CodeInvalidValue, "Unknown drill '%s'. Supported values are: %s.", d.Drill, strings.Join(api.DrillNames, ", "))
		}
		if !slices.Contains(cfg.Lanes, d.Lane) {
			return api.BadRequest(param+".lane", api.CodeInvalidValue, "Lane '%s' is not in the race's lanes (%s).", d.Lane, strings.Join(cfg.Lanes, ", "))
		}
		if ok := DrillLanes(d.Drill); !slices.Contains(ok, d.Lane) {
			return api.BadRequest(param+".lane", api.CodeInvalidValue, "Drill '%s' applies to the %s lanes only.", d.Drill, strings.Join(ok, ", "))
		}
		if d.AfterTurns < 0 || d.AfterTurns > maxTurns {
			return api.BadRequest(param+".after_turns", api.CodeInvalidValue, "after_turns must be between 0 and %d.", maxTurns)
		}
		if d.Times < 0 || d.Times > MaxDrillTimes {
			return api.BadRequest(param+".times", api.CodeInvalidValue, "times must be between 1 and %d (leave it out for 1).", MaxDrillTimes)
		}
		if d.DurationMS < 0 || d.DurationMS > 60_000 {
			return api.BadRequest(param+".duration_ms", api.CodeInvalidValue, "duration_ms must be between 1 and 60000.")
		}
		if d.AfterMS < 0 || d.AfterMS > maxTimedLimitMS {
			return api.BadRequest(param+".after_ms", api.CodeInvalidValue, "after_ms must be between 1 and %d.", maxTimedLimitMS)
		}
	}
	return nil
}

// laneDrills are the schedule's drills for one lane.
func (rc *race) laneDrills(lane string) []LaneDrill {
	var out []LaneDrill
	for _, d := range rc.cfg.Drills {
		if d.Lane == lane {
			out = append(out, d)
		}
	}
	return out
}

// drillAPI calls the engine's /api/drills directly (not through the proxy).
func (rc *race) drillAPI(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	resp, err := rc.r.engineDo(ctx, method, "/api/drills"+path, rd)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s /api/drills%s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// armDrills arms a lane's drills for one repeat, scoped to scope.
func (rc *race) armDrills(ctx context.Context, drills []LaneDrill, scope string) ([]string, error) {
	var ids []string
	for _, d := range drills {
		var dr api.Drill
		err := rc.drillAPI(ctx, http.MethodPost, "", api.DrillSpec{Drill: d.Drill, AfterTurns: d.AfterTurns, Times: d.Times,
			DurationMS: d.DurationMS, AfterMS: d.AfterMS, Scope: scope}, &dr)
		if err != nil {
			rc.disarmDrills(ctx, ids)
			return nil, err
		}
		ids = append(ids, dr.ID)
	}
	return ids, nil
}

func (rc *race) disarmDrills(ctx context.Context, ids []string) {
	for _, id := range ids {
		if err := rc.drillAPI(ctx, http.MethodDelete, "/"+id, nil, nil); err != nil {
			rc.r.log.Warn("disarm drill", "id", id, "err", err)
		}
	}
}

// nameDrops names the drill that dropped each stream the lane's turns
// recovered from, from the firings the engine recorded: a firing is
// recorded with its response id before response.created goes out, so
// it is there by the time the client has seen the drop.
func (rc *race) nameDrops(ctx context.Context, turns []Turn) {
	var unnamed bool
	for _, t := range turns {
		for _, r := range t.Recoveries {
			unnamed = unnamed || (r.ResponseID != "" && r.Drill == "")
		}
	}
	if !unnamed {
		return
	}
	var list struct {
		Data []api.Drill `json:"data"`
	}
	if err := rc.drillAPI(ctx, http.MethodGet, "", nil, &list); err != nil {
		rc.r.log.Warn("list drills", "err", err)
		return
	}
	fired := map[string]string{} // response id → drill
	for _, dr := range list.Data {
		for _, f := range dr.Firings {
			if f.ResponseID != "" {
				fired[f.ResponseID] = dr.Drill
			}
		}
	}
	for i := range turns {
		t := &turns[i]
		t.Recoveries = slices.Clone(t.Recoveries)
		for j := range t.Recoveries {
			r := &t.Recoveries[j]
			if d := fired[r.ResponseID]; r.ResponseID != "" && r.Drill == "" && d != "" {
				r.Drill = d
				addDrill(t, d)
			}
		}
	}
}
