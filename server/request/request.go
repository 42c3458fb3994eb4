package request

import (
	"net/http"
	"strings"

	"agentloop/api"

	"github.com/labstack/echo/v4"
)

// Client-session keys (docs/decisions.md, "Client sessions are
// the engine's to name"): a client
// session is one WebSocket connection, or the HTTP requests that share a
// prompt_cache_key, or else those of one TCP connection; its key is one
// of these prefixes and what follows. Drills count responses per client
// session and the inspector groups requests by it. (A "session" is also a
// login and an inspector session elsewhere: here it is only this key.)
const (
	clientSessionKeyWS          = "ws:"        // + a connection id
	clientSessionKeyPromptCache = "http:key:"  // + the prompt_cache_key
	clientSessionKeyHTTPConn    = "http:conn:" // + the client's address and port
)

// HTTPClientSessionKey is the client-session key of an HTTP request with
// that prompt_cache_key (empty when it has none or its body did not
// decode).
func HTTPClientSessionKey(r *http.Request, cacheKey string) string {
	if cacheKey != "" {
		return clientSessionKeyPromptCache + cacheKey
	}
	return clientSessionKeyHTTPConn + r.RemoteAddr
}

// NewWSClientSessionKey names a new WebSocket connection's client session.
func NewWSClientSessionKey() string { return clientSessionKeyWS + api.NewID("conn") }

// IsWebSocketSession says whether a client-session key names a WebSocket
// connection.
func IsWebSocketSession(key string) bool { return strings.HasPrefix(key, clientSessionKeyWS) }

// ClientOf reads who sent a request from its headers; nil when it says
// nothing.
func ClientOf(r *http.Request) *api.Client {
	c := api.Client{UserAgent: r.Header.Get("User-Agent"), Originator: r.Header.Get("Originator"),
		Beta: strings.Join(r.Header.Values("OpenAI-Beta"), ", "), Race: api.AgentloopHeader(r, api.HeaderRace)}
	if len(c.Race) > api.MaxRaceTag {
		c.Race = c.Race[:api.MaxRaceTag]
	}
	if c == (api.Client{}) {
		return nil
	}
	return &c
}

// IsUpgrade says whether a request asks to open a WebSocket.
func IsUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// clientIdentityKey is where the process leaves, on a request's echo
// context, the function that says who its client is (app's identify).
const clientIdentityKey = "agentloop.client-identity"

// SetClientIdentity gives a request the process's answer to who its
// client is (a login, a key, an address: app/client.go), read lazily.
func SetClientIdentity(c echo.Context, identify func(echo.Context) string) {
	c.Set(clientIdentityKey, identify)
}

// ClientIdentity is who a request's client is: what SetClientIdentity
// gave it, else its address.
func ClientIdentity(c echo.Context) string {
	if identify, ok := c.Get(clientIdentityKey).(func(echo.Context) string); ok {
		return identify(c)
	}
	return "addr:" + c.RealIP()
}
