package app

import (
	"errors"
	"log/slog"
	"net/http"

	"agentloop/api"

	"github.com/labstack/echo/v4"
)

// ErrorHandler is the process's one Echo HTTPErrorHandler. Handlers and
// middleware return errors; it writes an *api.Error with api.WriteHTTPError,
// answers an unknown page path with notFound's HTML page (nil: JSON like
// the rest), turns an *echo.HTTPError into an OpenAI-shaped error, and logs
// anything else as a 500. Engine tests install it on their own Echo.
func ErrorHandler(log *slog.Logger, notFound echo.HandlerFunc) echo.HTTPErrorHandler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		var ae *api.Error
		var he *echo.HTTPError
		switch {
		case errors.As(err, &ae):
		case errors.As(err, &he) && he.Code == http.StatusNotFound && notFound != nil && !isAPIPath(c.Request().URL.Path):
			_ = notFound(c)
			return
		case errors.As(err, &he):
			msg := http.StatusText(he.Code)
			if s, ok := he.Message.(string); ok {
				msg = s
			}
			ae = &api.Error{Status: he.Code, Type: "invalid_request_error", Message: msg}
		default:
			log.Error("handler", "path", c.Path(), "err", err)
			ae = api.ServerError("The server had an error while processing your request.")
		}
		_ = api.WriteHTTPError(c.Response(), ae)
	}
}
