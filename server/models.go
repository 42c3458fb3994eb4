package server

import (
	"net/http"

	"agentloop/api"

	"github.com/labstack/echo/v4"
)

// handleModels is GET /models: the built-in model names in the OpenAI list
// shape. custom-<tps> names are served but not listed.
func (e *Engine) handleModels(c echo.Context) error {
	return c.JSON(http.StatusOK, api.ListModels())
}

// handleModel is GET /models/:id: a built-in or custom-<tps> name, or an
// OpenAI-shaped 404.
func (e *Engine) handleModel(c echo.Context) error {
	m, ok := api.LookupModel(c.Param("id"))
	if !ok {
		return api.ModelNotFound(c.Param("id"))
	}
	return c.JSON(http.StatusOK, m)
}
