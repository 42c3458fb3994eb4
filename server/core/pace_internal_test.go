package core

import (
	"context"
	"testing"
	"time"

	"agentloop/api"
	"agentloop/inference"
)

// stopWhileWriting is a sink whose first flush stops the engine, and
// returns only once the stop has ended the generation: the stop lands
// while a wake-up is writing, after which nothing more is released.
type stopWhileWriting struct {
	e       *Engine
	gen     *inference.Generation
	flushed int
}

func (s *stopWhileWriting) Event(string, []byte) error { return nil }

func (s *stopWhileWriting) Flush() error {
	s.flushed++
	if s.flushed == 1 {
		s.e.stopAll()
		for !s.gen.Cancelled() { // context.AfterFunc cancels on its own goroutine
			time.Sleep(time.Millisecond)
		}
	}
	return nil
}

// A shutdown that ends a generation while its stream is writing is still
// a stop: the response must not be settled as completed.
func TestPaceReportsAStopThatLandsDuringAWrite(t *testing.T) {
	sched := inference.NewScheduler()
	defer sched.Close()
	e := &Engine{}
	e.stopCtx, e.stopAll = context.WithCancel(context.Background())
	// classic: about 65 tokens/s, so no token falls due between the first
	// release and the stop a moment later.
	gen := sched.Submit(inference.Job{Profile: inference.ProfileFor(api.ModelClassic), OutputTokens: 1000})
	out := &stopWhileWriting{e: e, gen: gen}
	pieces := make([]string, 1000)
	for i := range pieces {
		pieces[i] = " w"
	}
	st := &streamer{out: out, buf: make([]byte, 0, 512), items: []plannedItem{{item: api.Item{Type: api.TypeMessage,
		ID: api.NewID("msg"), Status: "completed", Role: "assistant", Content: []api.Part{{Type: "output_text"}}}, pieces: pieces}}}
	cancelled, stopped, err := e.pace(context.Background(), gen, st, nil)
	if err != nil || cancelled || !stopped {
		t.Fatalf("cancelled %v, stopped %v, err %v after %d of 1000 tokens: want a stop", cancelled, stopped, err, st.sent)
	}
	if st.sent >= 1000 {
		t.Fatalf("all %d tokens were sent before the stop", st.sent)
	}
}
