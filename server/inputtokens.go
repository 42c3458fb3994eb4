package server

import (
	"net/http"
	"strconv"
	"time"

	"agentloop/api"

	"github.com/labstack/echo/v4"
)

// countStages are the stages that turn a create body into the prompt's
// tokens: the measured pre-inference stages up to render. Counting is the
// same work a create does to learn its input_tokens, so the count equals
// the usage that create would report.
var countStages = []pipelineStage{
	{api.StageParse, api.Measured, (*Engine).parse},
	{api.StageResolve, api.Measured, (*Engine).resolve},
	{api.StageLoad, api.Measured, (*Engine).load},
	{api.StageValidate, api.Measured, (*Engine).validate},
	{api.StageRender, api.Measured, (*Engine).render},
}

// handleInputTokens is POST /responses/input_tokens: the input tokens of a
// create body (instructions, tools and the whole context, a parent's
// included), as {"object":"response.input_tokens","input_tokens":N}. The
// model is optional here, as in OpenAI's API, and fields a count does not
// use (stream, store, stream_id) are ignored like any unknown field.
func (e *Engine) handleInputTokens(c echo.Context) error {
	started := time.Now()
	body, release, aerr := e.readBody(c)
	if aerr != nil {
		return aerr
	}
	defer release()
	fl := &flight{trace: e.newTrace("http", started), body: body}
	if aerr := e.runStages(c.Request().Context(), fl, countStages, started); aerr != nil {
		return aerr
	}
	b := append(make([]byte, 0, 64), `{"object":"response.input_tokens","input_tokens":`...)
	b = strconv.AppendInt(b, int64(len(fl.rendered.tokens)), 10)
	b = append(b, '}')
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}
