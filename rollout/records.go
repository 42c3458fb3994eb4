package rollout

import (
	"context"
	"encoding/json"
	"time"

	"agentloop/store"
)

// RunReader reads stored runs. Every store backend implements it (checked in app).
type RunReader interface {
	GetRun(ctx context.Context, id string) (*store.Run, []store.Lane, error)
	RunTurns(ctx context.Context, runID string) ([]store.Turn, []store.Span, error)
	ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, []store.Lane, error)
}

// WorkloadStore keeps workloads by id: a race stores the workload it was
// given (under its content's id) and loads it by id when it runs.
type WorkloadStore interface {
	SaveWorkload(ctx context.Context, w *store.Workload) error
	GetWorkload(ctx context.Context, id string) (*store.Workload, error)
}

// RunStore is what a Runner needs from persistence.
type RunStore interface {
	RunReader
	WorkloadStore
	CreateRun(ctx context.Context, r *store.Run) error
	UpdateRun(ctx context.Context, id, status string, summary []byte) error
	SaveLane(ctx context.Context, l *store.Lane) error
	SaveTurn(ctx context.Context, t *store.Turn, spans []store.Span) error
}

// RunRecord is a stored run, decoded.
type RunRecord struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Status    string    `json:"status"`
	// StartedAt is when the run first ran (zero while queued, and for
	// runs stored before it was kept).
	StartedAt time.Time     `json:"started_at,omitzero"`
	Config    Config        `json:"config"`
	Summary   *Summary      `json:"summary,omitempty"`
	Lanes     []LaneSummary `json:"lanes"`
	Turns     []Turn        `json:"turns,omitempty"`
}

func decodeRun(r *store.Run, lanes []store.Lane) RunRecord {
	rec := RunRecord{ID: r.ID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, StartedAt: r.StartedAt, Status: r.Status}
	_ = json.Unmarshal(r.Config, &rec.Config)
	rec.Config.Workload = nil // a stored config never holds one; the id names it
	if r.WorkloadID != "" {
		rec.Config.WorkloadID = r.WorkloadID
	}
	if len(r.Summary) > 0 {
		var s Summary
		if json.Unmarshal(r.Summary, &s) == nil {
			s.Show() // a run stored before its rows were phrased
			rec.Summary = &s
		}
	}
	for _, l := range lanes {
		ls := LaneSummary{Lane: l.Name}
		if len(l.Summary) > 0 {
			_ = json.Unmarshal(l.Summary, &ls)
		}
		ls.Lane, ls.Status, ls.Label = l.Name, l.Status, LaneLabel(l.Name)
		rec.Lanes = append(rec.Lanes, ls)
	}
	return rec
}

// LoadRun reads a run with every turn; store.ErrNotFound when missing.
func LoadRun(ctx context.Context, db RunReader, id string) (*RunRecord, error) {
	r, lanes, err := db.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	rec := decodeRun(r, lanes)
	turns, _, err := db.RunTurns(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, st := range turns {
		var t Turn
		if json.Unmarshal(st.Timings, &t) != nil {
			continue
		}
		var out struct {
			Text  string `json:"text"`
			Calls []Call `json:"calls"`
		}
		if json.Unmarshal(st.Output, &out) == nil {
			t.Text, t.Calls = out.Text, out.Calls
		}
		rec.Turns = append(rec.Turns, t)
	}
	rec.Describe() // a run stored before its sentences were
	return &rec, nil
}

// ListRuns lists stored runs, newest first, without turns: one store
// call, whatever the number of runs.
func ListRuns(ctx context.Context, db RunReader, f store.RunFilter) ([]RunRecord, error) {
	runs, lanes, err := db.ListRuns(ctx, f)
	if err != nil {
		return nil, err
	}
	byRun := map[string][]store.Lane{}
	for _, l := range lanes {
		byRun[l.RunID] = append(byRun[l.RunID], l)
	}
	out := make([]RunRecord, 0, len(runs))
	for i := range runs {
		out = append(out, decodeRun(&runs[i], byRun[runs[i].ID]))
	}
	return out, nil
}
