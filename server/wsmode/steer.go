package wsmode

import (
	"encoding/json"
	"sync"
	"time"

	"agentloop/api"
	"agentloop/server/core"
)

// Steering over WebSocket mode (docs/protocol.md, "Steering"). The reader
// takes a response.steer at once, never queued: it steers a response in
// flight, which the message's lane is busy running. Each response in
// flight on the connection is listed here while it runs, with its lane
// and its core.Steering (server/core/steer.go), which acknowledges the
// input in the response's stream and stops the response at its next
// point between output items. The lane then runs the successor that
// commits the input (handle, ws.go), or keeps the input for the client's
// continuation while the response waits for tool outputs.

// steerTargets are a connection's responses in flight, by id, and the
// steering input parked for a continuation, by the response it continues.
type steerTargets struct {
	mu     sync.Mutex
	active map[string]steerTarget
	parked map[string]parkedSteers
}

type steerTarget struct {
	steering *core.Steering
	lane     *lane
	refusal  *api.SteerFailure // the response does not take steering, and why
}

type parkedSteers struct {
	lane   *lane
	steers []core.Steer
}

// succession is what a response that handed over gives the successor that
// commits its steering input.
type succession struct {
	from   string       // the response it continues
	steers []core.Steer // the input it commits
	body   []byte       // its response.create
}

// steer answers a response.steer the reader took: the response in flight
// it names takes the input, or response.steer.failed says why not.
func (wc *wsConn) steer(body []byte) {
	req, fail := api.DecodeSteer(body)
	ref := api.SteerRef{PreviousResponseID: req.PreviousResponseID}
	if fail != nil {
		wc.steerFailed(ref, req.Input, fail, "")
		return
	}
	if wc.proto {
		wc.steerFailed(ref, req.Input, &api.SteerFailure{Code: api.SteerNotSupported,
			Message: "The prototype's long-running responses do not support steering: send response.append after response.done."}, "")
		return
	}
	wc.steers.mu.Lock()
	t, ok := wc.steers.active[ref.PreviousResponseID]
	wc.steers.mu.Unlock()
	switch {
	case !ok && wc.lanes.holds(ref.PreviousResponseID):
		wc.steerFailed(ref, req.Input, api.SteerFinished(ref.PreviousResponseID), "")
		return
	case !ok:
		wc.steerFailed(ref, req.Input, &api.SteerFailure{Code: api.SteerResponseNotFound,
			Message: "No response '" + ref.PreviousResponseID + "' is in flight on this connection."}, "")
		return
	case t.refusal != nil:
		wc.steerFailed(ref, req.Input, t.refusal, t.lane.id)
		return
	}
	ref.ID = api.NewID("steer")
	if fail := t.steering.Offer(core.Steer{SteerRef: ref, Input: req.Input, Items: req.Items}); fail != nil {
		ref.ID = "" // not accepted: no id was given out
		wc.steerFailed(ref, req.Input, fail, t.lane.id)
	}
}

// steerFailed sends response.steer.failed outside any response's stream
// (sequence_number 0), on the target's lane when there is one.
func (wc *wsConn) steerFailed(ref api.SteerRef, input json.RawMessage, fail *api.SteerFailure, stream string) {
	b := api.AppendSteerFailed(nil, 0, ref, input, fail)
	if wc.out.text(b, stream) == nil {
		_ = wc.out.release()
	}
}

// holds says whether a lane's connection cache holds response id: one
// that finished on this connection.
func (ls *lanes) holds(id string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if c := ls.def.cache; c != nil && c.ID() == id {
		return true
	}
	for _, l := range ls.named {
		if c := l.cache; c != nil && c.ID() == id {
			return true
		}
	}
	return false
}

// steerable lets a create on lane l take steering while it runs, unless
// the connection is the prototype's; its request may refuse it
// (steeringRefusal). A continuation of a response that parked steering input
// commits that input, before its own (Parked); from is the response a
// successor commits the input of.
func (wc *wsConn) steerable(l *lane, fl *core.Flight, from *succession) (parked *succession) {
	if wc.proto {
		return nil
	}
	s := &core.Steering{}
	s.Opened = func(id string) {
		refusal := steeringRefusal(fl.Request())
		wc.steers.mu.Lock()
		defer wc.steers.mu.Unlock()
		if wc.steers.active == nil {
			wc.steers.active = map[string]steerTarget{}
		}
		wc.steers.active[id] = steerTarget{steering: s, lane: l, refusal: refusal}
	}
	fl.Via.Steering = s
	if from != nil {
		fl.Trace.SteeredFrom = from.from
		return nil
	}
	admit := fl.Via.Admit
	parked = &succession{}
	fl.Via.Admit = func(req *api.CreateRequest) *api.Error {
		if err := admit(req); err != nil {
			return err
		}
		if p := wc.unpark(l, req.PreviousResponseID); p != nil {
			items := []api.Item{}
			for _, st := range p {
				items = append(items, st.Items...)
			}
			fl.CommitSteering(items)
			fl.Trace.SteeredFrom = req.PreviousResponseID
			*parked = succession{from: req.PreviousResponseID, steers: p}
		}
		return nil
	}
	return parked
}

// steeringRefusal is why a create's response refuses steering, or nil:
// the hosted API refuses it for a response bound to a conversation or
// with automatic compaction (context_management).
func steeringRefusal(req *api.CreateRequest) *api.SteerFailure {
	present := func(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }
	switch {
	case present(req.Conversation):
		return &api.SteerFailure{Code: api.SteerNotSupported, Message: "Responses bound to a conversation do not support steering."}
	case present(req.ContextManagement):
		return &api.SteerFailure{Code: api.SteerNotSupported, Message: "Responses with automatic compaction (context_management) do not support steering."}
	}
	return nil
}

// unpark takes the steering input parked on lane l for a continuation of
// parent.
func (wc *wsConn) unpark(l *lane, parent string) []core.Steer {
	if parent == "" {
		return nil
	}
	wc.steers.mu.Lock()
	defer wc.steers.mu.Unlock()
	p, ok := wc.steers.parked[parent]
	if !ok || p.lane != l {
		return nil
	}
	delete(wc.steers.parked, parent)
	return p.steers
}

// steered settles the steering of a response that has ended on lane l:
// it leaves the responses in flight; input it parked waits for the
// client's continuation; input it hands over gives the successor that
// commits it.
func (wc *wsConn) steered(l *lane, fl *core.Flight, res core.Outcome) *succession {
	s := fl.Via.Steering
	if s == nil {
		return nil
	}
	wc.steers.mu.Lock()
	delete(wc.steers.active, res.Response.ID)
	if p := s.Parked(); len(p) > 0 {
		if wc.steers.parked == nil {
			wc.steers.parked = map[string]parkedSteers{}
		}
		wc.steers.parked[res.Response.ID] = parkedSteers{lane: l, steers: p}
	}
	wc.steers.mu.Unlock()
	steers := s.Handover()
	if len(steers) == 0 {
		return nil
	}
	return &succession{from: res.Response.ID, steers: steers, body: successorCreate(fl.Request(), res.Response.ID, steers)}
}

// successorCreate is the response.create of a successor: the steered
// response's settings, continuing it with the steering input.
func successorCreate(req *api.CreateRequest, from string, steers []core.Steer) []byte {
	next := *req
	next.Type = api.ClientResponseCreate
	next.PreviousResponseID = from
	next.Generate = nil
	input := []byte{'['}
	for _, st := range steers {
		for i := range st.Items {
			if len(input) > 1 {
				input = append(input, ',')
			}
			input = st.Items[i].AppendJSON(input)
		}
	}
	next.Input = append(input, ']')
	body, _ := json.Marshal(&next) // a decoded create marshals
	return body
}

// successionFailed returns the input a successor could not commit, when
// it failed before its response.created.
func (wc *wsConn) successionFailed(l *lane, sc *succession, aerr *api.Error) {
	if sc == nil {
		return
	}
	for _, st := range sc.steers {
		wc.steerFailed(st.SteerRef, st.Input, &api.SteerFailure{Code: api.SteerSuccessorCreationFailed,
			Message: "The successor response could not be created: " + aerr.Message}, l.id)
	}
}

// ending says whether the connection is ending: a lane starts nothing
// new, a successor included.
func (ls *lanes) ending() bool {
	select {
	case <-ls.ctx.Done():
		return true
	case <-ls.stop:
		return true
	default:
		return false
	}
}

// successorEntry is the queue entry of a successor, run at once on the
// steered response's lane.
func successorEntry(sc *succession) wsEntry {
	return wsEntry{body: sc.body, started: time.Now()}
}
