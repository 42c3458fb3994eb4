package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"agentloop/api"
	"agentloop/server/drill"

	"github.com/coder/websocket"
)

// TestConnectionLimitAfterMSLimitsItsScopeOnly: connection-limit's time
// form ends a connection of its scope after_ms after it opened, with the
// connection-limit answer (the error frame naming the drill, close 1000),
// while a connection of no scope and one of another scope stay open and
// keep serving.
func TestConnectionLimitAfterMSLimitsItsScopeOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dr := h.arm(api.DrillSpec{Drill: api.DrillConnectionLimit, AfterMS: 300, Scope: "card-1"})
	unscoped := h.rawWS("/v1/responses")
	other := h.rawWSWith("/v1/responses", http.Header{api.HeaderScope: {"card-2"}})
	scoped := h.rawWSWith("/v1/responses", http.Header{api.HeaderScope: {"card-1"}})

	// The scoped connection, left idle, reaches its limit by itself.
	e := readEvent(t, scoped).AsError()
	if e == nil || e.Code != api.CodeWebSocketConnectionLimitReached || e.Headers[api.HeaderDrill] != api.DrillConnectionLimit ||
		!strings.Contains(e.Message, "(60 minutes)") {
		t.Fatalf("the scoped connection's limit: %+v", e)
	}
	if _, _, err := scoped.Read(context.Background()); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("close after the limit: %v", err)
	}
	got, _ := h.sh.Drills.Get(dr.ID)
	if got.Fired != 1 || len(got.Firings) != 1 || !strings.HasPrefix(got.Firings[0].Session, "ws:") {
		t.Fatalf("firings %+v", got)
	}
	// The others, opened before it, are past after_ms and still serve.
	for _, c := range []*websocket.Conn{unscoped, other} {
		send(t, c, drillWSWarm)
		if evs := readResponse(t, c); evs[len(evs)-1].Type != api.EventCompleted {
			t.Fatalf("an unscoped connection after the limit: %s", evs[len(evs)-1].Raw)
		}
	}
	// Spent, the drill limits no later connection of its scope.
	again := h.rawWSWith("/v1/responses", http.Header{api.HeaderScope: {"card-1"}})
	send(t, again, drillWSWarm)
	if evs := readResponse(t, again); evs[len(evs)-1].Type != api.EventCompleted {
		t.Fatalf("a scoped connection after the drill is spent: %s", evs[len(evs)-1].Raw)
	}
}

// TestConnectionLimitAfterMSIsChecked: after_ms is refused with a 400
// naming it when it is zero, negative, too long, given with after_turns or
// on another drill.
func TestConnectionLimitAfterMSIsChecked(t *testing.T) {
	t.Parallel()
	for body, code := range map[string]string{
		`{"drill":"connection-limit","after_ms":0}`:                   api.CodeInvalidValue,
		`{"drill":"connection-limit","after_ms":-5}`:                  api.CodeInvalidValue,
		`{"drill":"connection-limit","after_ms":3600001}`:             api.CodeInvalidValue,
		`{"drill":"connection-limit","after_ms":500,"after_turns":2}`: api.CodeInvalidValue,
		`{"drill":"stall","after_ms":500}`:                            api.CodeUnsupportedParameter,
		`{"drill":"connection-limit","after_ms":"5s"}`:                api.CodeInvalidType,
	} {
		_, err := drill.DecodeDrillSpec([]byte(body))
		if err == nil || err.Status != 400 || err.Param != "after_ms" || err.Code != code {
			t.Errorf("%s: got %+v, want 400 %s on after_ms", body, err, code)
		}
	}
	s, err := drill.DecodeDrillSpec([]byte(`{"drill":"connection-limit","after_ms":1500,"scope":"card-1"}`))
	if err != nil || s.AfterMS != 1500 || s.Times != 1 {
		t.Fatalf("got %+v %v", s, err)
	}
}
