package server_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/internal/wait"
	"agentloop/server/enginetest"

	"github.com/coder/websocket"
)

// slotGauge reads one state of a profile's batch slots from /metrics.
func (h *harness) slotGauge(profile, state string) float64 {
	h.t.Helper()
	v, ok := h.scrape()[`agentloop_batch_slots{profile="`+profile+`",state="`+state+`"}`]
	if !ok {
		h.t.Fatalf("/metrics has no agentloop_batch_slots for %s/%s", profile, state)
	}
	return v
}

// waitSlots waits until the gauge reads want: a state, never a moment.
func (h *harness) waitSlots(profile, state string, want float64) {
	h.t.Helper()
	wait.UntilErr(h.t, "the batch slots gauge", func() error {
		if got := h.slotGauge(profile, state); got != want {
			return fmt.Errorf("agentloop_batch_slots{profile=%q,state=%q} is %g, want %g", profile, state, got, want)
		}
		return nil
	})
}

// pauseN opens n prototype responses and reads each to its response.done:
// each keeps a held batch slot.
func (h *harness) pauseN(n int) []*websocket.Conn {
	h.t.Helper()
	conns := make([]*websocket.Conn, n)
	for i := range conns {
		conns[i] = h.protoWS("/v1/responses")
		send(h.t.(*testing.T), conns[i], protoCreate)
		if evs := readSegment(h.t.(*testing.T), conns[i]); evs[len(evs)-1].Type != api.EventDone {
			h.t.Fatalf("response %d ended its first segment with %s", i, evs[len(evs)-1].Type)
		}
	}
	return conns
}

// Every way a paused response can end gives its batch slot back, and the
// profile then serves as many concurrent requests as before.
func TestPausedResponsesGiveTheirSlotsBack(t *testing.T) {
	t.Parallel()
	const n = 6
	t.Run("client closes while paused", func(t *testing.T) {
		h := newHarness(t)
		conns := h.pauseN(n)
		h.waitSlots("burst", "held", n)
		for _, c := range conns {
			c.Close(websocket.StatusNormalClosure, "")
		}
		h.waitSlots("burst", "held", 0)
		h.serveConcurrently(n)
	})
	t.Run("pause expires", func(t *testing.T) {
		h := newHarness(t, func(c *enginetest.Config) { c.WSLifetime = 300 * time.Millisecond })
		for _, c := range h.pauseN(n) {
			if ev := readEvent(t, c); ev.Type != api.EventFailed {
				t.Fatalf("after the pause: %s", ev.Raw)
			}
		}
		h.waitSlots("burst", "held", 0)
	})
	t.Run("engine stops", func(t *testing.T) {
		h := newHarness(t)
		conns := h.pauseN(n)
		h.waitSlots("burst", "held", n)
		h.v1.StopGenerating()
		for _, c := range conns {
			if ev := readEvent(t, c); ev.Type != api.EventFailed {
				t.Fatalf("after the stop: %s", ev.Raw)
			}
		}
		h.waitSlots("burst", "held", 0)
	})
}

// serveConcurrently runs n streamed requests at once on burst and checks
// each completes, then that the batch is empty again.
func (h *harness) serveConcurrently(n int) {
	h.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, body := h.post("/v1/responses", `{"model":"burst","input":"Say hi.","store":false}`)
			if status != 200 {
				errs <- string(body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		h.t.Fatalf("a request after the pauses failed: %s", e)
	}
	h.waitSlots("burst", "running", 0)
}
