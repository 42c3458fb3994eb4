package app

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"agentloop/api"
	"agentloop/store"

	"github.com/labstack/echo/v4"
)

// LoginStore is the store of browser logins, shared by every replica (the
// store calls each login a session: the login_sessions table). Every store
// backend implements it.
type LoginStore interface {
	CreateSession(ctx context.Context, s store.Session) error
	GetSession(ctx context.Context, id string) (store.Session, error)
	DeleteSession(ctx context.Context, id string) error
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error)
}

// loginCookiePrefix is followed by the port the browser sees: browsers
// send a cookie to every port of a host, so each server (or load balancer
// port) reads only its own.
const loginCookiePrefix = "agentloop_session_"

// LoginCookieName is the login cookie's name for a request sent to host
// (the Host header), over TLS or not: agentloop_session_PORT, the port
// being the one in host or the scheme's default.
func LoginCookieName(host string, tls bool) string {
	port := "80"
	if tls {
		port = "443"
	}
	if _, p, err := net.SplitHostPort(host); err == nil && p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err == nil {
			port = strconv.FormatUint(n, 10)
		}
	}
	return loginCookiePrefix + port
}

func loginCookieName(c echo.Context) string {
	return LoginCookieName(c.Request().Host, c.IsTLS())
}

// logins checks the API key and keeps the browser logins made with it.
// The cookie holds a random token (256 bits); the store keys the login
// by HMAC-SHA256(key, token), so the database holds no usable token, and a
// login made under another key is never found: changing the key logs
// every browser out. Logins expire a fixed TTL after they begin.
type logins struct {
	key      []byte
	db       LoginStore
	ttl      time.Duration
	throttle *throttle
	log      *slog.Logger
	now      func() time.Time
}

func newLogins(key string, db LoginStore, ttl time.Duration, th *throttle, log *slog.Logger) *logins {
	return &logins{key: []byte(key), db: db, ttl: ttl, throttle: th, log: log, now: time.Now}
}

// keyMatches compares a presented key with ours in constant time.
func (l *logins) keyMatches(presented string) bool {
	return subtle.ConstantTimeCompare([]byte(presented), l.key) == 1
}

// loginID is the store's key of the login whose cookie holds token.
func (l *logins) loginID(token string) string {
	m := hmac.New(sha256.New, l.key)
	m.Write([]byte("agentloop login session\x00"))
	m.Write([]byte(token))
	return hex.EncodeToString(m.Sum(nil))
}

// valid says the cookie's token names a live login. An expired one is
// deleted.
func (l *logins) valid(ctx context.Context, token string) (bool, error) {
	if token == "" {
		return false, nil
	}
	id := l.loginID(token)
	s, err := l.db.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !l.now().Before(s.ExpiresAt) {
		if err := l.db.DeleteSession(ctx, id); err != nil {
			l.log.Warn("delete expired session", "err", err)
		}
		return false, nil
	}
	return true, nil
}

// guessCheck refuses a key attempt from an address that has failed too
// often (429 with Retry-After), whether the key is right or not, so a
// right guess cannot slip through the throttle.
func (l *logins) guessCheck(c echo.Context) error {
	wait := l.throttle.wait(c.RealIP(), l.now())
	if wait <= 0 {
		return nil
	}
	secs := max(1, int(math.Ceil(wait.Seconds())))
	e := api.Errorf(http.StatusTooManyRequests, "", api.CodeRateLimitExceeded,
		"Too many incorrect API keys from this address. Please try again in %ds.", secs)
	e.Headers = map[string]string{"Retry-After": strconv.Itoa(secs)}
	return e
}

// wrongKey charges a failed attempt to the address and answers 401.
func (l *logins) wrongKey(c echo.Context) error {
	l.throttle.fail(c.RealIP(), l.now())
	return unauthorized("Incorrect API key provided.")
}

// login takes {"key": "..."} as JSON; with the right key it starts a
// login and sets its HttpOnly, SameSite=Strict cookie. It is
// state-changing, so its route is guarded by web.SameOriginJSON. Failed
// attempts are throttled per client address.
func (l *logins) login(c echo.Context) error {
	if err := l.guessCheck(c); err != nil {
		return err
	}
	var body struct {
		Key string `json:"key"`
	}
	if err := c.Bind(&body); err != nil {
		return api.BadRequest("key", api.CodeInvalidJSON, "Send {\"key\": \"...\"}.")
	}
	if !l.keyMatches(body.Key) {
		return l.wrongKey(c)
	}
	ctx := c.Request().Context()
	now := l.now()
	if _, err := l.db.DeleteExpiredSessions(ctx, now); err != nil {
		l.log.Warn("sweep expired sessions", "err", err)
	}
	name := loginCookieName(c)
	if old, err := c.Cookie(name); err == nil && old.Value != "" {
		// Logging in again replaces the login the browser had.
		if err := l.db.DeleteSession(ctx, l.loginID(old.Value)); err != nil {
			l.log.Warn("delete replaced session", "err", err)
		}
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return api.ServerError("The server could not start a session.")
	}
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	s := store.Session{ID: l.loginID(token), CreatedAt: now, ExpiresAt: now.Add(l.ttl)}
	if err := l.db.CreateSession(ctx, s); err != nil {
		l.log.Error("create session", "err", err)
		return api.StoreError(err, "The login could not be stored")
	}
	c.SetCookie(&http.Cookie{Name: name, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: c.IsTLS(), MaxAge: max(1, int(math.Ceil(l.ttl.Seconds()))), Expires: s.ExpiresAt})
	return c.NoContent(http.StatusNoContent)
}

// logout deletes the browser's login, if any, and clears its cookie. It
// is guarded like login and needs no login itself.
func (l *logins) logout(c echo.Context) error {
	name := loginCookieName(c)
	if ck, err := c.Cookie(name); err == nil && ck.Value != "" {
		if err := l.db.DeleteSession(c.Request().Context(), l.loginID(ck.Value)); err != nil {
			l.log.Error("delete session", "err", err)
			return api.StoreError(err, "The login could not be deleted")
		}
	}
	c.SetCookie(&http.Cookie{Name: name, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: c.IsTLS(), MaxAge: -1})
	return c.NoContent(http.StatusNoContent)
}
