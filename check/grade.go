package check

import (
	"fmt"
	"slices"
	"time"

	"agentloop/api"
)

// Observed is what the engine observed of one run of the client: the scope's
// traces in the order the requests arrived, the drill as armed with its
// firings, and how the client's process ended.
type Observed struct {
	Scope     string
	ToolTurns int
	Traces    []api.Trace
	Drill     *api.Drill // nil: the run armed none
	// Exit is the client's exit status (-1: killed at the time limit).
	Exit          int
	StartedUnixNS int64
	EndedUnixNS   int64
	Options       Options
	// Live says the client may still be running (the playground's
	// /check): what it has not done yet is not_exercised, not a fail.
	Live bool
}

// Result is one check's verdict with its evidence.
type Result struct {
	ID      string  `json:"id"`
	Passes  string  `json:"passes"`
	Verdict Verdict `json:"verdict"`
	// Reason says, in a sentence, why the verdict.
	Reason   string     `json:"reason"`
	Evidence []Evidence `json:"evidence,omitempty"`
	// Scope, Drill and Exit describe the run the check graded.
	Scope      string `json:"scope,omitempty"`
	Drill      string `json:"drill,omitempty"`
	Exit       int    `json:"exit"`
	DurationMS int64  `json:"duration_ms"`
}

// Evidence is one observed request (or refused upgrade) that a verdict
// rests on: its turn (1-based, among the scope's requests), its response,
// what the engine saw, and when.
type Evidence struct {
	Turn       int    `json:"turn"`
	ResponseID string `json:"response_id,omitempty"`
	Transport  string `json:"transport,omitempty"`
	Session    string `json:"session,omitempty"`
	// Event is what the engine saw: the error it answered, the drill that
	// fired, or the request's chaining.
	Event    string `json:"event"`
	AtUnixNS int64  `json:"at_unix_ns"`
}

func evidence(r *Observed, i int, event string) Evidence {
	t := &r.Traces[i]
	return Evidence{Turn: i + 1, ResponseID: t.ResponseID, Transport: t.Transport, Session: t.Session, Event: event, AtUnixNS: t.StartedUnixNS}
}

func verdict(v Verdict, reason string, ev ...Evidence) Result {
	return Result{Verdict: v, Reason: reason, Evidence: ev}
}

// unfinished is the verdict on a client that has not done what the
// check waits for: a fail once it has exited, not_exercised while it may
// still be running (Observed.Live).
func unfinished(r *Observed, reason string, ev ...Evidence) Result {
	if r.Live {
		return verdict(NotExercised, "not yet: "+reason, ev...)
	}
	return verdict(Fail, reason, ev...)
}

// describe says what the engine saw of a request.
func describe(t *api.Trace) string {
	s := t.Transport
	if t.Drill != "" {
		s += ", drill " + t.Drill + " fired"
	}
	if t.Error != "" {
		s += fmt.Sprintf(", answered %d %s", t.Status, t.Error)
	}
	if c := t.Chain; c != nil {
		if c.PreviousResponseID != "" {
			s += ", previous_response_id " + c.PreviousResponseID
		} else {
			s += ", no previous_response_id"
		}
		s += fmt.Sprintf(", store %t, %s (%d the model wrote), %s in context", c.Store, plural(c.InputItems, "input item"), c.ModelItems, plural(c.ToolOutputs, "tool output"))
	}
	if answered(t) {
		s += ", answered the task"
	} else if t.Shape != nil && len(t.Shape.Calls) > 0 {
		s += ", called " + plural(len(t.Shape.Calls), "tool")
	}
	return s
}

// answered says a request ended with the model's answer: generated, no
// error, and no tool call.
func answered(t *api.Trace) bool {
	return t.Error == "" && t.Shape != nil && t.Shape.Generated && len(t.Shape.Calls) == 0 && t.Usage != nil && t.Usage.OutputTokens > 0
}

// endNS is when the engine finished a request: its start plus its spans.
func endNS(t *api.Trace) int64 {
	end := int64(0)
	for _, s := range t.Spans {
		end = max(end, s.StartNS+s.DurationNS)
	}
	return t.StartedUnixNS + end
}

// answeredNS is when a response's terminal event could first have
// reached the client: the end of finalize, which comes before the
// terminal event (docs/decisions.md, "Finalize"), not of a modelled stage
// after it; the end of its spans when it has none.
func answeredNS(t *api.Trace) int64 {
	if s, ok := t.Span(api.StageFinalize); ok {
		return t.StartedUnixNS + s.StartNS + s.DurationNS
	}
	return endNS(t)
}

// offeredTools says the client ever offered a function tool, so K could
// keep its session going.
func offeredTools(r *Observed) bool {
	for i := range r.Traces {
		if s := r.Traces[i].Shape; s != nil && s.Tools > 0 {
			return true
		}
	}
	return len(r.Traces) == 0 // nothing seen: not the tools' fault
}

// noTools is the verdict for a client that offered no function tool.
func noTools() Result {
	return verdict(NotExercised, "the client offered no function tool, so the engine could not keep its session going to the drill's turn")
}

// fired is the index of the first request the run's drill fired on, or
// -1.
func fired(r *Observed, drill string) int {
	for i := range r.Traces {
		if r.Traces[i].Drill == drill {
			return i
		}
	}
	return -1
}

// finishedAfter is the index of the first request after i that answered
// the task, or -1.
func finishedAfter(r *Observed, i int) int {
	for j := i + 1; j < len(r.Traces); j++ {
		if answered(&r.Traces[j]) {
			return j
		}
	}
	return -1
}

// contextBefore is how many tool outputs the context of a request that
// failed at i should hold: those of the last request that got a response
// before it, plus the calls that response made.
func contextBefore(r *Observed, i int) int {
	for j := i - 1; j >= 0; j-- {
		t := &r.Traces[j]
		if t.Error == "" && t.Chain != nil && t.Shape != nil {
			return t.Chain.ToolOutputs + len(t.Shape.Calls)
		}
	}
	return 0
}

// notReached is the verdict of a run whose drill never fired.
func notReached(r *Observed, what string) Result {
	if !offeredTools(r) {
		return noTools()
	}
	if len(r.Traces) == 0 {
		return verdict(NotExercised, "the engine saw no request from the client")
	}
	return verdict(NotExercised, fmt.Sprintf("the client finished before the drill fired (%s); %s seen", what, plural(len(r.Traces), "request")))
}

// gradeRecovery grades what follows a request i that a drill failed:
// the next request must not name the same previous_response_id, must
// carry the full context unless it chains to a stored response, and the
// task must finish.
func gradeRecovery(r *Observed, i int, needNewSession bool) Result {
	failed := &r.Traces[i]
	ev := []Evidence{evidence(r, i, describe(failed))}
	n := i + 1
	if n >= len(r.Traces) {
		return unfinished(r, "the client gave up: no request followed the error", ev...)
	}
	next := &r.Traces[n]
	ev = append(ev, evidence(r, n, describe(next)))
	prev := ""
	if failed.Chain != nil {
		prev = failed.Chain.PreviousResponseID
	}
	if next.Chain != nil && prev != "" && next.Chain.PreviousResponseID == prev {
		return verdict(Fail, "the client sent the same previous_response_id again instead of starting a new chain", ev...)
	}
	if needNewSession && next.Session == failed.Session {
		return verdict(Fail, "the client went on on the connection that the server closed", ev...)
	}
	if next.Chain != nil && next.Chain.PreviousResponseID == "" && next.Error == "" && next.Chain.ToolOutputs < contextBefore(r, i) {
		return verdict(Fail, fmt.Sprintf("the new chain's context lost tool outputs: %d, where the conversation had %d", next.Chain.ToolOutputs, contextBefore(r, i)), ev...)
	}
	f := finishedAfter(r, i)
	if f < 0 {
		return unfinished(r, "the client never finished the task after the error", ev...)
	}
	ev = append(ev, evidence(r, f, describe(&r.Traces[f])))
	return verdict(Pass, "the client recovered with its full context and finished the task", ev...)
}

func gradeRecovers(r *Observed) Result {
	i := fired(r, api.DrillEvictCache)
	if i < 0 {
		return notReached(r, "no continuation with a cached parent on one connection")
	}
	if r.Traces[i].Error != api.CodePreviousResponseNotFound {
		return verdict(NotExercised, "the evicted parent was stored, so the engine loaded it and the client saw no error",
			evidence(r, i, describe(&r.Traces[i])))
	}
	return gradeRecovery(r, i, false)
}

func gradeWrapped(r *Observed) Result {
	i := fired(r, api.DrillEvictCache)
	if i < 0 {
		return notReached(r, "no continuation with a cached parent on one connection")
	}
	t := &r.Traces[i]
	if t.Transport != "websocket" || t.Error == "" {
		return verdict(NotExercised, "no error frame went out: the request was not on a WebSocket, or its parent was stored",
			evidence(r, i, describe(t)))
	}
	ev := []Evidence{evidence(r, i, fmt.Sprintf("error frame {type: error, status: %d, error: {code: %s}}", t.Status, t.Error))}
	for j := i + 1; j < len(r.Traces); j++ {
		if c := r.Traces[j].Chain; c != nil && t.Chain != nil && c.PreviousResponseID == t.Chain.PreviousResponseID {
			return verdict(Fail, "the client did not read the nested error.code: it sent the same previous_response_id again",
				append(ev, evidence(r, j, describe(&r.Traces[j])))...)
		}
	}
	if i+1 >= len(r.Traces) {
		return unfinished(r, "the client stopped after the error frame instead of acting on its code", ev...)
	}
	return verdict(Pass, "the client acted on the nested code: its next request started over", append(ev, evidence(r, i+1, describe(&r.Traces[i+1])))...)
}

func gradeConnectionLimitError(r *Observed) Result {
	i := fired(r, api.DrillConnectionLimit)
	if i < 0 {
		if ws := slices.ContainsFunc(r.Traces, func(t api.Trace) bool { return t.Transport == "websocket" }); !ws && len(r.Traces) > 0 {
			return verdict(NotExercised, "the client never used a WebSocket")
		}
		return notReached(r, "a second create on one connection")
	}
	return gradeRecovery(r, i, true)
}

func gradeReconnects(r *Observed) Result {
	if r.Drill == nil || len(r.Drill.Firings) == 0 {
		if ws := slices.ContainsFunc(r.Traces, func(t api.Trace) bool { return t.Transport == "websocket" }); !ws && len(r.Traces) > 0 {
			return verdict(NotExercised, "the client never used a WebSocket")
		}
		return notReached(r, fmt.Sprintf("no connection lived %s", r.Options.IdleLimit))
	}
	f := r.Drill.Firings[0]
	// The last request on the closed connection, and the first after it.
	last, next := -1, -1
	for i := range r.Traces {
		t := &r.Traces[i]
		if t.Session == f.Session {
			last = i
		} else if t.StartedUnixNS >= f.AtUnixNS && next < 0 {
			next = i
		}
	}
	ev := []Evidence{{Event: fmt.Sprintf("connection %s reached its limit after %s and was closed", f.Session, r.Options.IdleLimit), AtUnixNS: f.AtUnixNS, Session: f.Session, Transport: "websocket"}}
	if last >= 0 {
		ev = append(ev, evidence(r, last, "last request on the closed connection: "+describe(&r.Traces[last])))
	}
	if next < 0 {
		if last >= 0 && answered(&r.Traces[last]) {
			return verdict(NotExercised, "the client had finished the task when the connection reached its limit", ev...)
		}
		return unfinished(r, "the client did not reconnect after the server closed its connection", ev...)
	}
	t := &r.Traces[next]
	ev = append(ev, evidence(r, next, "first request after the close: "+describe(t)))
	if t.Error == api.CodePreviousResponseNotFound {
		return verdict(Fail, "the client continued on the new connection with a previous_response_id the server no longer had, instead of its full context", ev...)
	}
	if t.Chain != nil && t.Chain.PreviousResponseID == "" && t.Error == "" && last >= 0 {
		want := r.Traces[last].Chain.ToolOutputs
		if s := r.Traces[last].Shape; s != nil {
			want += len(s.Calls)
		}
		if t.Chain.ToolOutputs < want {
			return verdict(Fail, fmt.Sprintf("the client reconnected without its full context: %d tool outputs, where the conversation had %d", t.Chain.ToolOutputs, want), ev...)
		}
	}
	fin := finishedAfter(r, next-1)
	if fin < 0 {
		return unfinished(r, "the client reconnected but never finished the task", ev...)
	}
	return verdict(Pass, "the client reconnected and continued with its full context", append(ev, evidence(r, fin, describe(&r.Traces[fin])))...)
}

func gradeRetryAfter(r *Observed) Result {
	i := fired(r, api.DrillHTTP429)
	if i < 0 {
		if http := slices.ContainsFunc(r.Traces, func(t api.Trace) bool { return t.Transport == "http" }); !http && len(r.Traces) > 0 {
			return verdict(NotExercised, "the client never sent a create over HTTP, where the 429 is answered")
		}
		return notReached(r, "a second create in one HTTP session")
	}
	want := time.Duration(r.Drill.DurationMS) * time.Millisecond
	end := endNS(&r.Traces[i])
	ev := []Evidence{{Turn: i + 1, Transport: r.Traces[i].Transport, Session: r.Traces[i].Session,
		Event: fmt.Sprintf("answered 429 with retry-after-ms %d (Retry-After %d s)", want.Milliseconds(), int((want+time.Second-1)/time.Second)), AtUnixNS: end}}
	if i+1 >= len(r.Traces) {
		return unfinished(r, "the client gave up after the 429", ev...)
	}
	waited := time.Duration(r.Traces[i+1].StartedUnixNS - end)
	ev = append(ev, evidence(r, i+1, fmt.Sprintf("retried after %d ms: %s", waited.Milliseconds(), describe(&r.Traces[i+1]))))
	if waited < want {
		return verdict(Fail, fmt.Sprintf("the client retried after %d ms, before the %d ms the server asked for", waited.Milliseconds(), want.Milliseconds()), ev...)
	}
	if f := finishedAfter(r, i); f < 0 {
		return unfinished(r, "the client waited but never finished the task", ev...)
	}
	return verdict(Pass, fmt.Sprintf("the client waited %d ms (asked: %d ms) and finished", waited.Milliseconds(), want.Milliseconds()), ev...)
}

func gradeFallback(r *Observed) Result {
	i := fired(r, api.DrillRefuseUpgrade)
	if i < 0 {
		if len(r.Traces) == 0 {
			return verdict(NotExercised, "the engine saw no request from the client")
		}
		return verdict(NotExercised, "the client never asked for a WebSocket, so it had nothing to fall back from")
	}
	refused := &r.Traces[i]
	deadline := refused.StartedUnixNS + r.Options.FallbackDeadline.Nanoseconds()
	ev := []Evidence{evidence(r, i, fmt.Sprintf("upgrade refused with %d", refused.Status))}
	refusals := 0
	for j := range r.Traces {
		if r.Traces[j].Drill == api.DrillRefuseUpgrade {
			refusals++
		}
	}
	for j := i + 1; j < len(r.Traces); j++ {
		t := &r.Traces[j]
		if t.Transport == "http" && answered(t) {
			ev = append(ev, evidence(r, j, describe(t)))
			took := time.Duration(t.StartedUnixNS - refused.StartedUnixNS)
			if endNS(t) > deadline {
				return verdict(Fail, fmt.Sprintf("the client finished over HTTP %s after the first refusal (%s), past the %s deadline", took.Round(time.Millisecond), plural(refusals, "refused upgrade"), r.Options.FallbackDeadline), ev...)
			}
			return verdict(Pass, fmt.Sprintf("the client fell back to HTTP after %s and finished in time", plural(refusals, "refused upgrade")), ev...)
		}
	}
	return unfinished(r, fmt.Sprintf("the client never finished over HTTP after %s", plural(refusals, "refused upgrade")), ev...)
}

func gradeDrop(r *Observed) Result {
	i := fired(r, api.DrillDropMidStream)
	if i < 0 {
		return notReached(r, "a second streamed response in one session")
	}
	d := &r.Traces[i]
	ev := []Evidence{evidence(r, i, "the stream was dropped after its first delta: "+describe(d))}
	if d.Chain != nil && d.Chain.PreviousResponseID != "" {
		for j := i + 1; j < len(r.Traces); j++ {
			if c := r.Traces[j].Chain; c != nil && c.PreviousResponseID == d.Chain.PreviousResponseID {
				return verdict(Fail, "the client resent the request whose output had started (same previous_response_id) instead of starting a fresh chain",
					append(ev, evidence(r, j, describe(&r.Traces[j])))...)
			}
		}
	}
	f := finishedAfter(r, i)
	if f < 0 {
		return unfinished(r, "the client never finished the task after the drop", ev...)
	}
	return verdict(Pass, "the client finished the task after the drop without replaying the dropped request", append(ev, evidence(r, f, describe(&r.Traces[f])))...)
}

func gradeContinuation(r *Observed) Result {
	seen := 0
	for i := range r.Traces {
		t := &r.Traces[i]
		if t.Transport != "websocket" || t.Chain == nil || t.Chain.PreviousResponseID == "" {
			continue
		}
		seen++
		if t.Chain.ModelItems > 0 {
			return verdict(Fail, fmt.Sprintf("a continuation resent %s the model wrote, which the previous response already held", plural(t.Chain.ModelItems, "item")),
				evidence(r, i, describe(t)))
		}
	}
	if seen == 0 {
		if !offeredTools(r) {
			return noTools()
		}
		return verdict(NotExercised, "the client sent no WebSocket continuation (previous_response_id on a WebSocket)")
	}
	return verdict(Pass, fmt.Sprintf("all %d WebSocket continuations sent only new items", seen))
}

func gradeInFlight(r *Observed) Result {
	ends := map[string]int{}
	for i := range r.Traces {
		if id := r.Traces[i].ResponseID; id != "" {
			ends[id] = i
		}
	}
	seen := 0
	for i := range r.Traces {
		t := &r.Traces[i]
		if t.Chain == nil || t.Chain.PreviousResponseID == "" {
			continue
		}
		p, ok := ends[t.Chain.PreviousResponseID]
		if !ok {
			continue
		}
		seen++
		if answeredNS(&r.Traces[p]) > t.StartedUnixNS {
			return verdict(Fail, "the client sent a continuation before the response it names had ended",
				evidence(r, p, "named response: "+describe(&r.Traces[p])), evidence(r, i, describe(t)))
		}
	}
	if seen == 0 {
		return verdict(NotExercised, "the client sent no continuation (previous_response_id naming one of its responses)")
	}
	return verdict(Pass, fmt.Sprintf("all %d continuations named a response that had ended", seen))
}

func gradeStoreFalse(r *Observed) Result {
	unstored := map[string]int{}
	for i := range r.Traces {
		t := &r.Traces[i]
		if t.ResponseID != "" && t.Chain != nil && !t.Chain.Store {
			unstored[t.ResponseID] = i
		}
	}
	seen := 0
	for i := range r.Traces {
		t := &r.Traces[i]
		if t.Transport != "http" || t.Chain == nil || t.Chain.PreviousResponseID == "" {
			continue
		}
		seen++
		if p, ok := unstored[t.Chain.PreviousResponseID]; ok {
			return verdict(Fail, "the client chained over HTTP to a response it created with store:false",
				evidence(r, p, "created with store:false: "+describe(&r.Traces[p])), evidence(r, i, describe(t)))
		}
	}
	if seen == 0 {
		return verdict(NotExercised, "the client sent no continuation over HTTP")
	}
	return verdict(Pass, fmt.Sprintf("all %d HTTP continuations named stored responses", seen))
}

// plural is "1 item", "2 items".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// gradeNewest fails a continuation that names a response which an earlier
// request had already continued successfully: the client went back to an
// older branch of its conversation, and the turns after that response are
// lost to the model. A retry after a failed continuation names the same
// response again and is not a fault; neither are chains that run side by
// side, each continuing its own newest response.
func gradeNewest(r *Observed) Result {
	continuedBy := map[string]int{} // a response → the request that continued it successfully
	seen := 0
	for i := range r.Traces {
		t := &r.Traces[i]
		if t.Chain == nil || t.Chain.PreviousResponseID == "" {
			continue
		}
		prev := t.Chain.PreviousResponseID
		seen++
		if j, ok := continuedBy[prev]; ok {
			return verdict(Fail, "the client continued a response it had already continued: it resumed an older branch, and the turns after it were lost",
				evidence(r, j, "the earlier continuation: "+describe(&r.Traces[j])), evidence(r, i, describe(t)))
		}
		if t.Error == "" && t.Drill == "" && t.ResponseID != "" {
			continuedBy[prev] = i
		}
	}
	if seen == 0 {
		return verdict(NotExercised, "the client sent no continuation (previous_response_id)")
	}
	return verdict(Pass, fmt.Sprintf("all %d continuations named a response not yet continued", seen))
}
