package scope

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"agentloop/api"
	"agentloop/server/request"

	"github.com/labstack/echo/v4"
)

// maxScopeBody bounds POST /api/scopes: a spec is a few bytes.
const maxScopeBody = 4 << 10

// Register mounts the scopes API on g (/api): POST /scopes creates a
// scope for the caller, GET and DELETE /scopes/:id read (with its traces)
// and forget one of the caller's. The process's guards cover it like
// every /api route.
func Register(g *echo.Group, s *Scopes) {
	g.POST("/scopes", func(c echo.Context) error {
		body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxScopeBody+1))
		if err != nil || len(body) > maxScopeBody {
			return api.BadRequest("", api.CodeInvalidBody, "The body could not be read, or is larger than %d bytes.", maxScopeBody)
		}
		spec, aerr := DecodeScopeSpec(body)
		if aerr != nil {
			return aerr
		}
		sc, aerr := s.Create(spec, request.ClientIdentity(c))
		if aerr != nil {
			return aerr
		}
		c.Response().Header().Set(echo.HeaderLocation, "/api/scopes/"+sc.ID)
		return c.JSON(http.StatusCreated, sc)
	})
	g.GET("/scopes/:id", func(c echo.Context) error {
		sc, ok := s.Get(c.Param("id"), request.ClientIdentity(c))
		if !ok {
			return scopeNotFound(c.Param("id"))
		}
		c.Response().Header().Set("Cache-Control", "no-store")
		return c.JSON(http.StatusOK, sc)
	})
	g.DELETE("/scopes/:id", func(c echo.Context) error {
		if !s.Delete(c.Param("id"), request.ClientIdentity(c)) {
			return scopeNotFound(c.Param("id"))
		}
		return c.JSON(http.StatusOK, map[string]any{"id": c.Param("id"), "object": "scope", "deleted": true})
	})
}

func scopeNotFound(id string) *api.Error {
	return api.Errorf(http.StatusNotFound, "", api.CodeNotFound, "No scope with id '%s' of yours.", id)
}

// DecodeScopeSpec reads POST /api/scopes's body strictly: an empty body
// is a scope without K; unknown fields, wrong types and bad values are
// 400s naming the parameter.
func DecodeScopeSpec(body []byte) (api.ScopeSpec, *api.Error) {
	var s api.ScopeSpec
	if len(bytes.TrimSpace(body)) == 0 {
		return s, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return api.ScopeSpec{}, api.BadRequest(te.Field, api.CodeInvalidType, "Invalid type for '%s': expected %s.", te.Field, te.Type.String())
		}
		return api.ScopeSpec{}, api.BadRequest("", api.CodeInvalidJSON, "The body is not a scope: %s (send {\"tool_turns\": K}).", err.Error())
	}
	if _, err := dec.Token(); err != io.EOF {
		return api.ScopeSpec{}, api.BadRequest("", api.CodeInvalidJSON, "The body must hold exactly one JSON object.")
	}
	return s, Check(s)
}
