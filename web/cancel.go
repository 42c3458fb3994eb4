package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"

	"agentloop/api"

	"github.com/labstack/echo/v4"
)

// HeaderCancelToken carries a run's cancel token to its cancel and delete
// routes (docs/protocol.md, "agentloop's headers").
const HeaderCancelToken = "X-Agentloop-Cancel-Token"

// cancelTokens signs and checks cancel tokens: a run's token is
// HMAC-SHA256(secret, its id), so the server keeps no table of them.
type cancelTokens struct{ secret []byte }

func newCancelTokens(secret []byte) cancelTokens {
	if len(secret) == 0 {
		secret = make([]byte, 32)
		_, _ = rand.Read(secret)
	}
	return cancelTokens{secret: secret}
}

// token is run id's cancel token.
func (t cancelTokens) token(id string) string {
	m := hmac.New(sha256.New, t.secret)
	m.Write([]byte("agentloop cancel token\x00"))
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// valid says token is run id's cancel token, in constant time.
func (t cancelTokens) valid(id, token string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(t.token(id)))
}

// mayStop is the cancel rule of cancel and delete: the client holds the
// server's key (a login, or the key as a bearer token), or sends the
// run's cancel token, which only whoever started the run was given.
// Anyone else gets a 403.
func (p *Playground) mayStop(c echo.Context, id, doing string) *api.Error {
	if p.identify(c).Keyed || p.cancels.valid(id, c.Request().Header.Get(HeaderCancelToken)) {
		return nil
	}
	return api.Errorf(http.StatusForbidden, "", api.CodeInvalidCancelToken,
		"Only whoever started run '%s' may %s it: send the cancel_token its start answered, in the %s header.", id, doing, HeaderCancelToken)
}
