package httpapi

import (
	"net/http"

	"agentloop/api"

	"github.com/labstack/echo/v4"
)

// Models is GET /models: the built-in model names in the OpenAI list
// shape. custom-<tps> names are served but not listed.
func (h *API) Models(c echo.Context) error {
	return c.JSON(http.StatusOK, api.ListModels())
}

// Model is GET /models/:id: a built-in or custom-<tps> name, or an
// OpenAI-shaped 404.
func (h *API) Model(c echo.Context) error {
	m, ok := api.LookupModel(c.Param("id"))
	if !ok {
		return api.ModelNotFound(c.Param("id"))
	}
	return c.JSON(http.StatusOK, m)
}
