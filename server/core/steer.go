package core

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"agentloop/api"
)

// Steering (docs/protocol.md, "Steering"): a transport that takes
// response.steer gives a response a Steering (Via.Steering) and offers it
// the input the client sends while the response is in flight. The stream
// acknowledges each submission with response.steer.accepted at its next
// wake-up. At the next point between output items (the point
// Via.BetweenItems also has) the response stops, incomplete with reason
// steered, and hands the input over: the transport commits it in a
// successor response that continues from this one. A response that has
// sampled a tool call cannot stop before the client answers it: it
// completes, then response.steer.pending names the outputs it waits for,
// and the transport keeps the input for the client's continuation. A
// response that ends otherwise (failed, cancelled) returns the input in
// response.steer.failed.

// Steer is one accepted steering submission.
type Steer struct {
	api.SteerRef
	Input json.RawMessage // as sent, for a failure to return
	Items []api.Item      // the user messages it adds
}

// Steering is the steering one response in flight takes.
type Steering struct {
	// Opened, when set, is called with the response's id before
	// response.created goes out: the transport can offer from then on.
	Opened func(id string)

	news atomic.Bool // fresh holds submissions

	mu       sync.Mutex
	fresh    []Steer // accepted, not yet acknowledged in the stream
	held     []Steer // acknowledged
	closed   bool    // the response has ended: it takes no more
	handover []Steer // for the successor, once the response has stopped or completed
	parked   []Steer // for the client's continuation, once the response waits for tool outputs
}

// Offer queues s for the response, or says why it cannot.
func (s *Steering) Offer(st Steer) *api.SteerFailure {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return api.SteerFinished(st.PreviousResponseID)
	case len(s.fresh)+len(s.held) >= api.MaxPendingSteers:
		return &api.SteerFailure{Code: api.SteerTooManyPending, Message: "Too much steering input is pending for this response."}
	}
	s.fresh = append(s.fresh, st)
	s.news.Store(true)
	return nil
}

// Handover takes the submissions a successor must commit, once the
// response has ended: it stopped for them, or completed without a tool
// call to answer.
func (s *Steering) Handover() []Steer { return s.take(&s.handover) }

// Parked takes the submissions that wait for the client's continuation,
// which answers the response's tool calls.
func (s *Steering) Parked() []Steer { return s.take(&s.parked) }

func (s *Steering) take(list *[]Steer) []Steer {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := *list
	*list = nil
	return out
}

// handedOver reads the error that ended a segment's stream: the stop
// between items (handOver) is no error, but the response was steered.
func handedOver(err error) (error, bool) {
	if _, ok := err.(handOver); ok {
		return nil, true
	}
	return err, false
}

// wireSteering makes the stream serve the flight's steering and its
// transport's Via.BetweenItems, each asked after an output item closes.
func (e *Engine) wireSteering(fl *Flight, st *streamer) {
	between := fl.Via.BetweenItems
	s := fl.Via.Steering
	if s == nil {
		if between != nil {
			st.between = func() bool { return between(fl) }
		}
		return
	}
	st.steering = s
	if s.Opened != nil {
		s.Opened(fl.response.ID)
	}
	st.between = func() bool {
		if between != nil && between(fl) {
			return true
		}
		// acknowledge errors end the stream at its next event anyway
		_ = st.acknowledge()
		return s.stopsAt(st)
	}
}

// acknowledge sends response.steer.accepted for each submission accepted
// since the last call.
func (st *streamer) acknowledge() error {
	s := st.steering
	if s == nil || !s.news.Load() {
		return nil
	}
	s.mu.Lock()
	fresh := s.fresh
	s.fresh = nil
	s.news.Store(false)
	s.held = append(s.held, fresh...)
	s.mu.Unlock()
	for _, f := range fresh {
		st.buf = api.AppendSteerAccepted(st.buf, st.seq, f.SteerRef)
		if err := st.emit(api.EventSteerAccepted); err != nil {
			return err
		}
	}
	return nil
}

// stopsAt says whether the response stops here, between two of its
// items: it holds acknowledged input, has items left to stream, and has
// sampled no tool call the client must answer first.
func (s *Steering) stopsAt(st *streamer) bool {
	if st.cur >= len(st.items) {
		return false // complete: there is no point left between items
	}
	for i := range st.items[:st.cur] {
		if awaitsOutput(st.items[i].item.Type) {
			return false
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held) > 0
}

func awaitsOutput(typ string) bool {
	return typ == api.TypeFunctionCall || typ == api.TypeCustomToolCall
}

// endSteering settles the steering of a response that has ended, before
// its terminal event: it acknowledges what came in since the last
// wake-up, takes no more, and decides where the input goes. It returns
// what goes out after the terminal event: response.steer.pending when the
// response waits for tool outputs, response.steer.failed when it failed.
func (e *Engine) endSteering(fl *Flight, st *streamer, res Outcome) func() {
	s := st.steering
	if s == nil {
		return func() {}
	}
	_ = st.acknowledge()
	s.mu.Lock()
	s.closed = true
	steers := append(s.held, s.fresh...) // fresh only if acknowledging failed
	s.held, s.fresh = nil, nil
	if len(steers) == 0 {
		s.mu.Unlock()
		return func() {}
	}
	ids := make([]string, len(steers))
	for i := range steers {
		ids[i] = steers[i].ID
	}
	fl.Trace.SteeredBy = ids
	var required []api.RequiredInput
	for _, it := range res.Response.Output {
		if awaitsOutput(it.Type) {
			r := api.RequiredInput{Type: api.TypeFunctionCallOutput, CallID: it.CallID, Name: it.Name}
			if it.Type == api.TypeCustomToolCall {
				r = api.RequiredInput{Type: api.TypeCustomToolCallOutput, CallID: it.CallID}
			}
			required = append(required, r)
		}
	}
	kept := res.State != nil
	switch {
	case kept && len(required) == 0:
		s.handover = steers
	case kept:
		s.parked = steers
	}
	s.mu.Unlock()
	return func() {
		for _, f := range steers {
			switch {
			case kept && len(required) == 0:
				return
			case kept:
				st.buf = api.AppendSteerPending(st.buf, st.seq, f.SteerRef, required)
				_ = st.emit(api.EventSteerPending)
			default:
				st.buf = api.AppendSteerFailed(st.buf, st.seq, f.SteerRef, f.Input, &api.SteerFailure{Code: api.SteerResponseNotActive,
					Message: "The response ended before its steering input could be committed; send it in a new response.create."})
				_ = st.emit(api.EventSteerFailed)
			}
		}
		_ = st.out.Flush()
	}
}

// CommitSteering adds the steering input a continuation commits
// (Steering.Parked) to the request's own input: first, as the SDK's types
// say, except for the tool outputs the input opens with, which answer the
// calls the parked input waited for and must follow them (a user message
// between a call and its output is refused). Call it from Via.Admit.
func (fl *Flight) CommitSteering(items []api.Item) {
	own := fl.parsed.items
	at := 0
	for at < len(own) && (own[at].Type == api.TypeFunctionCallOutput || own[at].Type == api.TypeCustomToolCallOutput) {
		at++
	}
	out := make([]api.Item, 0, len(items)+len(own))
	out = append(append(append(out, own[:at]...), items...), own[at:]...)
	fl.parsed.items = out
}
