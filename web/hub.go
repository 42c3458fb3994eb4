package web

import (
	"encoding/json"
	"log/slog"
	"sync"

	"agentloop/rollout"
	"agentloop/views"
)

// subscriberBuffer is how many snapshots a live page may fall behind (at
// 20 Hz, under a second) before it is dropped as too slow.
const subscriberBuffer = 16

// hub is the live feed's one fan-out. The runner hands each snapshot of a
// race this playground started to publish, once; the hub encodes it once
// and offers it to every page watching that race. The inspector's feeds
// (inspect.go) go through it the same way, with send. Each page has its own
// buffered channel; a page that falls behind is dropped (its socket
// closed) rather than slowing the others. A race nobody watches costs an
// empty map lookup per snapshot.
type hub struct {
	// frame is what a page receives for a snapshot (Playground.liveFrame).
	frame   func(rollout.Snapshot) any
	running func(runID string) bool
	log     *slog.Logger
	buf     int

	mu    sync.Mutex
	feeds map[string]*feed // races with at least one page watching
}

type feed struct {
	id   string
	subs map[*subscriber]struct{}
	last []byte // the latest snapshot, so late joiners start from it
}

// subscriber is one page. msgs is closed when the race ends or when the
// page is dropped; slow, set before that close, says which.
type subscriber struct {
	msgs chan []byte
	slow bool
}

// newHub returns a hub; running says whether a feed's source is live in
// this process (a race running here, or the inspector).
func newHub(running func(runID string) bool, frame func(rollout.Snapshot) any, log *slog.Logger, buf int) *hub {
	return &hub{running: running, frame: frame, log: log, buf: buf, feeds: map[string]*feed{}}
}

// subscribe joins runID's feed; ok is false when the race is not running in
// this process. Call leave when the page goes away.
func (h *hub) subscribe(runID string) (s *subscriber, leave func(), ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.feeds[runID]
	if f == nil {
		// The runner stops counting a race as running before its final
		// publish, which waits for mu: a race running now will find
		// this feed and close it.
		if !h.running(runID) {
			return nil, nil, false
		}
		f = &feed{id: runID, subs: map[*subscriber]struct{}{}}
		h.feeds[runID] = f
	}
	s = &subscriber{msgs: make(chan []byte, h.buf)}
	if f.last != nil {
		s.msgs <- f.last
	}
	f.subs[s] = struct{}{}
	return s, func() { h.leave(f, s) }, true
}

// publish is the runner's observer of every race the playground starts
// (rollout.Runner.Start): it encodes a watched race's snapshot once and
// offers it to every page; the final snapshot then closes the pages.
func (h *hub) publish(snap rollout.Snapshot) {
	h.mu.Lock()
	f := h.feeds[snap.RunID]
	h.mu.Unlock()
	if f == nil {
		return // nobody watches
	}
	b, err := json.Marshal(h.frame(snap))
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.feeds[snap.RunID] != f {
		return // the last page left meanwhile
	}
	if err != nil {
		h.log.Error("encode snapshot", "run", f.id, "err", err)
	} else {
		f.offer(b)
	}
	if snap.Final() {
		// The race ended: close what remains.
		delete(h.feeds, f.id)
		for s := range f.subs {
			delete(f.subs, s)
			close(s.msgs)
		}
	}
}

// offer keeps frame b for late joiners and offers it to every page; a
// page whose buffer is full is dropped. Call with h.mu held.
func (f *feed) offer(b []byte) {
	f.last = b
	for s := range f.subs {
		select {
		case s.msgs <- b:
		default:
			s.slow = true
			delete(f.subs, s)
			close(s.msgs)
		}
	}
}

// watched says whether any page watches feed id, so a frame nobody would
// read is never built.
func (h *hub) watched(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.feeds[id] != nil
}

// send offers an encoded frame to every page watching feed id (the
// inspector's feeds, which never end).
func (h *hub) send(id string, b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.feeds[id]; f != nil {
		f.offer(b)
	}
}

func (h *hub) leave(f *feed, s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := f.subs[s]; ok {
		delete(f.subs, s)
		close(s.msgs)
	}
	if len(f.subs) == 0 && h.feeds[f.id] == f {
		// Nobody watches: the race's snapshots are no longer encoded.
		delete(h.feeds, f.id)
	}
}

// liveWorkloadTurns is how many of each lane's latest turns a workload
// race's live frame carries: a workload runs up to 1,000 turns a lane,
// and a frame goes out up to 20 times a second, so it stays under 64 KiB
// (the permalink has every turn). A scenario's few dozen turns all go.
const liveWorkloadTurns = 12

// liveSnapshot keeps the feed small: the race view draws timings, so tool
// arguments, outputs, model text and the stack's work (for re-costing)
// stay out (the transcript has them), and a workload race's lanes carry
// their latest liveWorkloadTurns turns. Snapshots share turn slices with
// the runner, so this copies.
func liveSnapshot(s rollout.Snapshot) rollout.Snapshot {
	lanes := make([]rollout.LaneSnapshot, len(s.Lanes))
	for i, l := range s.Lanes {
		from := l.Turns
		if s.Config.Scenario == rollout.WorkloadScenario && len(from) > liveWorkloadTurns {
			from = from[len(from)-liveWorkloadTurns:]
		}
		turns := make([]rollout.Turn, len(from))
		for j, t := range from {
			t.Text, t.StackWork = "", nil
			if len(t.Calls) > 0 {
				calls := make([]rollout.Call, len(t.Calls))
				for k, c := range t.Calls {
					calls[k] = rollout.Call{Name: c.Name, CallID: c.CallID}
				}
				t.Calls = calls
			}
			turns[j] = t
		}
		l.Turns = turns
		lanes[i] = l
	}
	s.Lanes = lanes
	return s
}

// liveFrame is one frame of a race's live feed: the snapshot without
// content, and the sentences the race page shows about it, phrased here so
// the page builds none: whether the lanes shared the CPU, and, once the
// race ended, the same race under the other stacks.
type liveFrame struct {
	rollout.Snapshot
	Fairness string           `json:"fairness"`
	SameRace []views.SameRace `json:"same_race,omitempty"`
}

func (p *Playground) liveFrame(s rollout.Snapshot) any {
	f := liveFrame{Snapshot: liveSnapshot(s), Fairness: fairness(s.Config, p.cores, s.Final())}
	if s.Final() {
		f.SameRace = sameRaceLinks(s.Config)
	}
	return f
}
