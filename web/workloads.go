package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"agentloop/api"
	"agentloop/rollout"
	"agentloop/store"
	"agentloop/workload"

	"github.com/labstack/echo/v4"
)

// WorkloadDB is the store of workloads (docs/workload.md). Every store
// backend implements it.
type WorkloadDB interface {
	SaveWorkload(ctx context.Context, w *store.Workload) error
	GetWorkload(ctx context.Context, id string) (*store.Workload, error)
	ListWorkloads(ctx context.Context, limit int) ([]store.Workload, error)
	DeleteWorkload(ctx context.Context, id string) error
}

func (p *Playground) registerWorkloads(e *echo.Echo) {
	g := e.Group("/api/workloads")
	g.POST("", p.uploadWorkload, SameOriginJSON, p.heldBody(workload.MaxBytes))
	g.GET("", p.listWorkloads)
	g.GET("/:id", p.getWorkload)
	g.DELETE("/:id", p.deleteWorkload, SameOrigin)
}

// workloadInfo is a stored workload as the API lists it; its permalink is
// /api/workloads/{id}, which serves the workload itself.
type workloadInfo struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	CreatedAt int64  `json:"created_at"`
	Source    string `json:"source"`
	Turns     int    `json:"turns"`
	URL       string `json:"url"`
}

func infoOf(w store.Workload) workloadInfo {
	return workloadInfo{ID: w.ID, Object: "workload", CreatedAt: w.CreatedAt.Unix(), Source: w.Source, Turns: w.Turns, URL: "/api/workloads/" + w.ID}
}

// saveWorkload stores w under its content's id (workload.ID), so the same
// workload uploaded twice is one, and returns it.
func (p *Playground) saveWorkload(ctx context.Context, w *workload.Workload) (store.Workload, error) {
	b, err := w.Canonical()
	if err != nil {
		return store.Workload{}, err
	}
	sw := store.Workload{ID: workload.ID(b), CreatedAt: time.Now(), Source: w.Source, Turns: len(w.Turns), JSON: b}
	return sw, p.workloads.SaveWorkload(ctx, &sw)
}

// uploadWorkload is POST /api/workloads: the body is a workload; the
// answer its id and permalink. A workload no context window of the served
// engine holds is refused, naming its turn (rollout.CheckWorkloadFits).
func (p *Playground) uploadWorkload(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, workload.MaxBytes+1))
	if err != nil {
		return api.BadRequest("", api.CodeInvalidJSON, "Could not read the body.")
	}
	if len(body) > workload.MaxBytes {
		return api.Errorf(http.StatusRequestEntityTooLarge, "", api.CodeRequestTooLarge, "A workload is at most %d bytes.", workload.MaxBytes)
	}
	w, err := workload.Parse(body)
	if err != nil {
		return workloadProblem(err)
	}
	if aerr := rollout.CheckWorkloadFits(w, p.windows); aerr != nil {
		return aerr
	}
	sw, err := p.saveWorkload(c.Request().Context(), w)
	if err != nil {
		return workloadNotStored(err)
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/workloads/"+sw.ID)
	return c.JSON(http.StatusOK, infoOf(sw))
}

// workloadNotStored is a failed workload save as api.StoreError's rule
// says, with its verb: nothing was stored, so no id is named.
func workloadNotStored(err error) *api.Error {
	var we *workload.Error
	if errors.As(err, &we) {
		return workloadProblem(err)
	}
	return api.StoreError(err, "The workload could not be stored")
}

// workloadProblem is a decoder's error as a 400 naming the field.
func workloadProblem(err error) *api.Error {
	msg := strings.TrimPrefix(err.Error(), "workload: ")
	return api.BadRequest("workload", api.CodeInvalidValue, "Invalid workload: %s.", msg)
}

// getWorkload is GET /api/workloads/{id}: the workload itself, a file
// `agentloop race --workload` takes.
func (p *Playground) getWorkload(c echo.Context) error {
	id := c.Param("id")
	w, err := p.workloads.GetWorkload(c.Request().Context(), id)
	if err != nil {
		return storeError(err, "Workload", id)
	}
	c.Response().Header().Set("Content-Disposition", `inline; filename="`+id+`.json"`)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, w.JSON)
}

// listWorkloads is GET /api/workloads?limit=: newest first.
func (p *Playground) listWorkloads(c echo.Context) error {
	limit, err := listLimit(c)
	if err != nil {
		return err
	}
	ws, err := p.workloads.ListWorkloads(c.Request().Context(), limit)
	if err != nil {
		return storeError(err, "Workloads", "")
	}
	data := make([]workloadInfo, 0, len(ws))
	for _, w := range ws {
		data = append(data, infoOf(w))
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, map[string]any{"object": "list", "data": data})
}

// deleteWorkload is DELETE /api/workloads/{id}. A workload a stored run
// raced stays (409): the run names it and holds no copy.
func (p *Playground) deleteWorkload(c echo.Context) error {
	id := c.Param("id")
	if err := p.workloads.DeleteWorkload(c.Request().Context(), id); err != nil {
		if errors.Is(err, store.ErrInUse) {
			return api.Errorf(http.StatusConflict, "", api.CodeWorkloadInUse, "Workload '%s' is raced by a stored run; delete the run first.", id)
		}
		return storeError(err, "Workload", id)
	}
	return c.JSON(http.StatusOK, map[string]any{"id": id, "object": "workload", "deleted": true})
}

// resolveWorkload fills a run config's workload from its workload_id,
// from the store; the runner validates it with the rest of the config and
// stores an inline one (under its content's id) only once the race is
// admitted, so a refused run stores nothing.
func (p *Playground) resolveWorkload(ctx context.Context, cfg *rollout.Config) error {
	cfg.WorkloadSummary = nil // the runner's to fill
	switch {
	case cfg.WorkloadID != "" && cfg.Workload != nil:
		return api.BadRequest("workload_id", api.CodeInvalidValue, "Send a workload or a workload_id, not both.")
	case cfg.WorkloadID != "" && p.workloads == nil:
		return api.BadRequest("workload_id", api.CodeInvalidValue, "This server keeps no workloads; send the workload itself.")
	case cfg.WorkloadID != "":
		sw, err := p.workloads.GetWorkload(ctx, cfg.WorkloadID)
		if err != nil {
			if e := storeError(err, "Workload", cfg.WorkloadID); e.Status == http.StatusNotFound {
				return api.BadRequest("workload_id", api.CodeInvalidValue, "Workload '%s' not found.", cfg.WorkloadID)
			}
			return storeError(err, "Workload", cfg.WorkloadID)
		}
		w, err := workload.ParseStored(sw.JSON)
		if err != nil {
			return workloadProblem(err)
		}
		cfg.Workload = w
	}
	return nil
}
