package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"

	"agentloop/api"
	"agentloop/apistack"
)

// fetchTrace reads the engine's trace of one response, directly (not
// through the proxy).
func (rc *race) fetchTrace(ctx context.Context, id string) (*api.Trace, error) {
	resp, err := rc.r.engineDo(ctx, http.MethodGet, "/api/traces/"+id, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("trace %s: %d", id, resp.StatusCode)
	}
	var tr api.Trace
	return &tr, json.NewDecoder(resp.Body).Decode(&tr)
}

// mergeTraces fills each turn's engine stages that live merging has not
// filled already.
func (rc *race) mergeTraces(ctx context.Context, turns []Turn, merged map[int]Turn) {
	for i := range turns {
		if m, ok := merged[turns[i].Index]; ok && m.ResponseID == turns[i].ResponseID {
			turns[i].Stages, turns[i].OverheadNS, turns[i].StackWork, turns[i].Drills, turns[i].Recoveries = m.Stages, m.OverheadNS, m.StackWork, m.Drills, m.Recoveries
			continue
		}
		rc.merge(ctx, &turns[i])
	}
}

// merge fills one turn's stages from the engine's trace for its response:
// the engine's measured overhead, its modelled API stack, queue, prefill
// and decode, and the network time the client saw beyond them.
func (rc *race) merge(ctx context.Context, t *Turn) bool {
	if t.ResponseID == "" {
		return false
	}
	tr, err := rc.fetchTrace(ctx, t.ResponseID)
	if err != nil {
		return false
	}
	var overhead, stack, prefill, decode, held int64
	var work []apistack.Work
	for _, s := range tr.Spans {
		// The prototype's turns are segments of one response: turn i is
		// the spans of segment i.
		if t.Lane == LanePrototype && s.Segment != t.Index {
			continue
		}
		switch api.SpanGroup(s.Name) {
		case api.GroupOverhead:
			overhead += s.DurationNS
		case api.GroupAPIStack:
			stack += s.DurationNS
			work = append(work, apistack.WorkOf(tr, s))
		case api.GroupQueuePrefill:
			prefill += s.DurationNS
		case api.GroupDecode:
			decode += s.DurationNS
		case api.GroupRecovery: // a drill held the stream
			held += s.DurationNS
		}
	}
	t.Drills = slices.Clone(t.Drills) // the turn may be shared with the saver
	addDrill(t, tr.Drill)
	t.OverheadNS, t.StackWork = overhead, work
	stages := []StageTime{}
	if t.RecoveryNS > 0 { // the failed attempts came first
		stages = append(stages, StageTime{Name: StageRecovery, DurationNS: t.RecoveryNS, Kind: "measured"})
	}
	if t.ConnectNS > 0 {
		stages = append(stages, StageTime{Name: StageConnect, DurationNS: t.ConnectNS, Kind: "modelled"})
	}
	stages = append(stages,
		StageTime{Name: StageOverhead, DurationNS: overhead, Kind: "measured"})
	if stack > 0 {
		stages = append(stages, StageTime{Name: StageAPIStack, DurationNS: stack, Kind: "modelled"})
	}
	stages = append(stages,
		StageTime{Name: StagePrefill, DurationNS: prefill, Kind: "modelled"},
		StageTime{Name: StageDecode, DurationNS: decode, Kind: "modelled"})
	if held > 0 {
		stages = append(stages, StageTime{Name: StageRecovery, DurationNS: held, Kind: "modelled"})
	}
	network := (t.DoneNS - t.SentNS) - overhead - stack - prefill - decode - held - t.ConnectNS - t.RecoveryNS
	stages = append(stages, StageTime{Name: StageNetwork, DurationNS: max(network, 0), Kind: networkKind(rc.cfg)})
	t.Stages = append(stages, t.Stages...) // tool stages last
	return true
}

func addDrill(t *Turn, drill string) {
	if drill != "" && !slices.Contains(t.Drills, drill) {
		t.Drills = append(t.Drills, drill)
	}
}

// networkKind says whether a race's network time is modelled: the latency
// proxy delays real bytes by a chosen round trip; with none, the time is
// loopback's own, measured.
func networkKind(cfg Config) string {
	if cfg.RTTms > 0 {
		return "modelled"
	}
	return "measured"
}
