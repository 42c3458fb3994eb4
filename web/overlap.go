package web

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"agentloop/rollout"
	"agentloop/store"

	"github.com/labstack/echo/v4"
)

// maxOverlapCandidates bounds how many neighbouring runs overlapping loads.
const maxOverlapCandidates = 20

// span is when a run really ran: from its start (a queued run waits
// without running; a run stored before its start was kept says it by its
// first request) to its last update, or now while it is live.
func span(r rollout.RunRecord, now time.Time) (start, end time.Time) {
	start = r.CreatedAt
	first := int64(0)
	for _, t := range r.Turns {
		if t.SentUnixNS > 0 && (first == 0 || t.SentUnixNS < first) {
			first = t.SentUnixNS
		}
	}
	switch {
	case !r.StartedAt.IsZero():
		start = r.StartedAt
	case first > 0:
		start = time.Unix(0, first)
	}
	end = r.UpdatedAt
	switch {
	case r.Status == rollout.StatusQueued || r.Status == rollout.StatusRunning:
		end = now
	case end.Before(start): // an ended run without its end time: at most all its lanes back to back
		var total int64
		for _, l := range r.Lanes {
			total += l.TotalNS
		}
		end = start.Add(time.Duration(total))
	}
	return start, end
}

// overlapping returns the runs that ran while rec ran: they shared the
// machine, so both measured slower than either would alone. It reads the
// neighbours' list rows; only a neighbour stored before runs kept their
// start is read whole, for its turns' times.
func (p *Playground) overlapping(ctx context.Context, rec rollout.RunRecord) ([]string, error) {
	now := time.Now()
	start, end := span(rec, now)
	near, _, err := p.list(ctx, store.RunFilter{Until: end, Limit: maxOverlapCandidates})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range near {
		if c.ID == rec.ID {
			continue
		}
		cStart, cEnd := span(c, now)
		if cEnd.Before(start) {
			continue // ended before rec began
		}
		if c.StartedAt.IsZero() {
			full, err := p.runs.LoadRun(ctx, c.ID) // its turns say whether and when it really began
			if err != nil || len(full.Turns) == 0 {
				continue // deleted meanwhile, or never ran
			}
			cStart, cEnd = span(*full, now)
		}
		if cStart.Before(end) && cEnd.After(start) {
			out = append(out, c.ID)
		}
	}
	slices.Sort(out)
	return out, nil
}

// overlapJSON is the runs that ran alongside one, and the sentence that
// says so (overlapNote), which the race page shows as it is.
type overlapJSON struct {
	OverlappedWith []string `json:"overlapped_with"`
	Note           string   `json:"note,omitempty"`
}

// overlaps is GET /ui/runs/{id}/overlaps → {"overlapped_with": [ids],
// "note": sentence}, for the race page to say so in a result.
func (p *Playground) overlaps(c echo.Context) error {
	rec, err := p.runs.LoadRun(c.Request().Context(), c.Param("id"))
	if err != nil {
		return storeError(err, "Run", c.Param("id"))
	}
	ids, err := p.overlapping(c.Request().Context(), *rec)
	if err != nil {
		p.log.Error("overlapping runs", "run", rec.ID, "err", err)
		ids = nil
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, overlapJSON{OverlappedWith: append([]string{}, ids...), Note: overlapNote(ids)})
}

// overlapNote says in one sentence which runs ran alongside, on the run
// page and (through overlaps) the race page.
func overlapNote(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return "This race overlapped " + strings.Join(ids, ", ") + ": they shared the machine, so each measured slower than it would alone."
}
