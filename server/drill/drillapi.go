package drill

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"agentloop/api"

	"github.com/labstack/echo/v4"
)

// maxDrillBody bounds POST /api/drills: a spec is a few dozen bytes.
const maxDrillBody = 16 << 10

// Register mounts the drill API on g (/api): POST /drills arms,
// GET /drills lists with the firings, GET and DELETE /drills/:id read and
// disarm one. The process's guards (same origin, JSON only, --api-key)
// cover it like every /api route.
func Register(g *echo.Group, d *Drills) {
	g.POST("/drills", func(c echo.Context) error {
		body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxDrillBody+1))
		if err != nil {
			return api.BadRequest("", api.CodeInvalidBody, "The request body could not be read.")
		}
		if len(body) > maxDrillBody {
			return api.Errorf(http.StatusRequestEntityTooLarge, "", api.CodeRequestTooLarge, "The body is larger than %d bytes.", maxDrillBody)
		}
		spec, aerr := DecodeDrillSpec(body)
		if aerr != nil {
			return aerr
		}
		dr, aerr := d.Arm(spec)
		if aerr != nil {
			return aerr
		}
		c.Response().Header().Set(echo.HeaderLocation, "/api/drills/"+dr.ID)
		return c.JSON(http.StatusCreated, dr)
	})
	g.GET("/drills", func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "no-store")
		return c.JSON(http.StatusOK, DrillList{Object: "list", Data: d.List()})
	})
	g.GET("/drills/:id", func(c echo.Context) error {
		dr, ok := d.Get(c.Param("id"))
		if !ok {
			return drillNotFound(c.Param("id"))
		}
		c.Response().Header().Set("Cache-Control", "no-store")
		return c.JSON(http.StatusOK, dr)
	})
	g.DELETE("/drills/:id", func(c echo.Context) error {
		dr, ok := d.Disarm(c.Param("id"))
		if !ok {
			return drillNotFound(c.Param("id"))
		}
		return c.JSON(http.StatusOK, DisarmedDrill{ID: dr.ID, Object: "drill", Deleted: true, Fired: dr.Fired})
	})
}

// DrillList is GET /api/drills's body.
type DrillList struct {
	Object string      `json:"object"`
	Data   []api.Drill `json:"data"`
}

// DisarmedDrill is DELETE /api/drills/:id's body.
type DisarmedDrill struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
	Fired   int    `json:"fired"`
}

func drillNotFound(id string) *api.Error {
	return api.Errorf(http.StatusNotFound, "", api.CodeNotFound, "No armed drill with id '%s'.", id)
}

// DecodeDrillSpec reads POST /api/drills's body strictly and checks it:
// unknown fields, wrong types and bad values are 400s naming the
// parameter.
func DecodeDrillSpec(body []byte) (api.DrillSpec, *api.Error) {
	var s api.DrillSpec
	if len(bytes.TrimSpace(body)) == 0 {
		return s, api.BadRequest("", api.CodeInvalidJSON, `The body is empty; send a JSON object such as {"drill": "evict-cache", "after_turns": 2}.`)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return api.DrillSpec{}, drillJSONProblem(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return api.DrillSpec{}, api.BadRequest("", api.CodeInvalidJSON, "The body must hold exactly one JSON object.")
	}
	// An empty scope would arm a server-wide drill the caller meant to
	// scope: it is refused, not read as none.
	var given struct {
		Scope   *string `json:"scope"`
		AfterMS *int64  `json:"after_ms"`
	}
	if json.Unmarshal(body, &given) == nil && given.Scope != nil && *given.Scope == "" {
		return api.DrillSpec{}, emptyScope()
	}
	// after_ms: 0 is a limit of no time, not the default it would read as.
	if given.AfterMS != nil && *given.AfterMS == 0 {
		return api.DrillSpec{}, afterMSRange()
	}
	if err := Check(&s); err != nil {
		return api.DrillSpec{}, err
	}
	return s, nil
}

func drillJSONProblem(err error) *api.Error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &typ):
		if typ.Field == "" {
			return api.BadRequest("", api.CodeInvalidType, "The body must be a JSON object.")
		}
		return api.BadRequest(typ.Field, api.CodeInvalidType, "Invalid type for '%s': got %s.", typ.Field, typ.Value)
	case errors.As(err, &syn):
		return api.BadRequest("", api.CodeInvalidJSON, "The body is not valid JSON (at byte %d).", syn.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return api.BadRequest(name, api.CodeUnknownParameter, "Unknown parameter: '%s'.", name)
	}
	return api.BadRequest("", api.CodeInvalidJSON, "The body is not valid JSON.")
}
