package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/check"
	"agentloop/store"
	"agentloop/views"

	"github.com/labstack/echo/v4"
)

// CheckDB stores the report cards of agentloop check (README "Grade your
// client"). Every store backend implements it.
type CheckDB interface {
	SaveCheckReport(ctx context.Context, r *store.CheckReport) error
	GetCheckReport(ctx context.Context, id string) (*store.CheckReport, error)
	ListCheckReports(ctx context.Context, limit int) ([]store.CheckReport, error)
}

func (p *Playground) registerChecks(e *echo.Echo) {
	g := e.Group("/api/checks")
	g.POST("", p.saveCheckReport, SameOriginJSON, p.heldBody(check.MaxReportBytes))
	g.GET("", p.listCheckReports)
	g.GET("/:id", p.getCheckReport)
	e.GET("/check/:id", p.checkReportPage)
}

// checkInfo is a stored report card as the API lists it.
type checkInfo struct {
	ID           string `json:"id"`
	Object       string `json:"object"`
	CreatedAt    int64  `json:"created_at"`
	Client       string `json:"client"`
	Passed       int    `json:"passed"`
	Failed       int    `json:"failed"`
	NotExercised int    `json:"not_exercised"`
	URL          string `json:"url"`
}

func checkInfoOf(r store.CheckReport) checkInfo {
	return checkInfo{ID: r.ID, Object: "check.report", CreatedAt: r.CreatedAt.Unix(), Client: r.Client, Passed: r.Passed,
		Failed: r.Failed, NotExercised: r.NotExercised, URL: "/check/" + r.ID}
}

// saveCheckReport is POST /api/checks: the body is a report card as
// agentloop check --json prints it (agentloop check --server posts it);
// the answer is its id and permalink.
func (p *Playground) saveCheckReport(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, check.MaxReportBytes+1))
	if err != nil {
		return api.BadRequest("", api.CodeInvalidJSON, "Could not read the body.")
	}
	if len(body) > check.MaxReportBytes {
		return api.Errorf(http.StatusRequestEntityTooLarge, "", api.CodeRequestTooLarge, "A report is at most %d bytes.", check.MaxReportBytes)
	}
	rep, err := check.DecodeReport(body)
	if err != nil {
		return api.BadRequest("", api.CodeInvalidValue, "Invalid report: %s.", err.Error())
	}
	rec, err := check.Record(rep)
	if err != nil {
		return err
	}
	if err := p.checks.SaveCheckReport(c.Request().Context(), rec); err != nil {
		return storeErrorDoing(err, "Report", "", "stored")
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/checks/"+rec.ID)
	return c.JSON(http.StatusCreated, checkInfoOf(*rec))
}

// getCheckReport is GET /api/checks/{id}: the report itself.
func (p *Playground) getCheckReport(c echo.Context) error {
	r, err := p.checks.GetCheckReport(c.Request().Context(), c.Param("id"))
	if err != nil {
		return storeError(err, "Report", c.Param("id"))
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, r.JSON)
}

// listCheckReports is GET /api/checks?limit=: newest first.
func (p *Playground) listCheckReports(c echo.Context) error {
	limit, err := listLimit(c)
	if err != nil {
		return err
	}
	list, err := p.checks.ListCheckReports(c.Request().Context(), limit)
	if err != nil {
		return storeError(err, "Reports", "")
	}
	out := make([]checkInfo, len(list))
	for i, r := range list {
		out[i] = checkInfoOf(r)
	}
	return c.JSON(http.StatusOK, map[string]any{"object": "list", "data": out})
}

// checkReportPage is /check/{id}: the report card's permalink.
func (p *Playground) checkReportPage(c echo.Context) error {
	id := c.Param("id")
	r, err := p.checks.GetCheckReport(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return p.problem(c, http.StatusNotFound, "Report not found", "There is no report card '"+id+"'. It may have been swept by the retention.")
	}
	if err != nil {
		return p.storeProblem(c, err, "Could not load the report", "The report could not be read")
	}
	rep, err := check.DecodeReport(r.JSON)
	if err != nil {
		return p.problem(c, http.StatusInternalServerError, "Unreadable report", "The stored report could not be read: "+err.Error())
	}
	return render(c, http.StatusOK, views.CheckReportPage(p.page("Report card "+id, "inspect"), cardOf(id, rep)))
}

// cardOf is a report as the page shows it.
func cardOf(id string, r *check.Report) views.CheckCard {
	started := time.Unix(0, r.StartedUnixNS).UTC()
	card := views.CheckCard{ID: id, Client: strings.Join(r.Client, " "), Server: r.Server,
		Started: started.Format("2006-01-02 15:04:05 UTC"), StartedISO: started.Format(time.RFC3339),
		Took:   time.Duration(r.EndedUnixNS - r.StartedUnixNS).Round(time.Millisecond).String(),
		Passed: r.Passed, Failed: r.Failed, NotExercised: r.NotExercised}
	for _, res := range r.Results {
		row := views.CheckRow{ID: res.ID, Passes: res.Passes, Verdict: string(res.Verdict), Reason: res.Reason,
			Drill: res.Drill, Exit: exitText(res.Exit), Took: (time.Duration(res.DurationMS) * time.Millisecond).String()}
		for _, ev := range res.Evidence {
			row.Evidence = append(row.Evidence, ev.String())
		}
		card.Rows = append(card.Rows, row)
	}
	return card
}

func exitText(code int) string {
	if code == -1 {
		return "killed at the time limit"
	}
	return fmt.Sprintf("exit %d", code)
}
