package app

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"

	"agentloop/api"
	"agentloop/web"

	"github.com/labstack/echo/v4"
)

// loginContextKey is where keyAuth leaves the store id of the login it let
// a request through with.
const loginContextKey = "agentloop.login"

// identify is who a client is, the process's one answer (web.Identify):
//   - its login (a browser signed in with the key), which holds the key;
//   - failing that, on a server with --api-key, its bearer token: keyAuth
//     lets only the key through, so every key holder is one client;
//   - failing that, its address (Echo's IPExtractor, set in routes). On a
//     server without a key any token would make a new client, so a token
//     is never one there.
func identify(key string) web.Identify {
	return func(c echo.Context) web.Client {
		if id, ok := c.Get(loginContextKey).(string); ok && id != "" {
			return web.Client{ID: "login:" + id[:min(len(id), 16)], Keyed: true}
		}
		if key != "" {
			if token, ok := api.Bearer(c.Request()); ok {
				sum := sha256.Sum256([]byte(token))
				return web.Client{ID: "key:" + hex.EncodeToString(sum[:8]),
					Keyed: subtle.ConstantTimeCompare([]byte(token), []byte(key)) == 1}
			}
		}
		return web.AddressOf(c)
	}
}
