package server_test

import (
	"testing"

	"agentloop/api"

	"github.com/coder/websocket"
)

// A client that closes mid-stream gets the close handshake's echo: the
// library writes it from the reader goroutine and closes the socket right
// after, so it must never wait in a stream's batch.
func TestWebSocketCloseMidStreamIsEchoed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for i := range 20 {
		c := h.rawWS("/v1/responses")
		send(t, c, `{"type":"response.create","model":"burst","input":"go","max_output_tokens":100000,"ignore_eos":true}`)
		for ev := readEvent(t, c); ev.Type != api.EventOutputTextDelta; ev = readEvent(t, c) {
		}
		if err := c.Close(websocket.StatusNormalClosure, "done"); err != nil {
			t.Fatalf("close %d mid-stream: %v", i, err)
		}
	}
}
