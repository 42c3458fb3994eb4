package web

import (
	"encoding/json"
	"log/slog"
	"sync"

	"agentloop/rollout"
)

// subscriberBuffer is how many snapshots a live page may fall behind (at
// 20 Hz, under a second) before it is dropped as too slow.
const subscriberBuffer = 16

// hub fans each running race's snapshots out to every page watching it,
// with one upstream subscription per race whatever the number of pages.
// Each page has its own buffered channel; a page that falls behind is
// dropped (its socket closed) rather than slowing the others.
type hub struct {
	races Races
	log   *slog.Logger
	buf   int

	mu    sync.Mutex
	feeds map[string]*feed
}

type feed struct {
	id     string
	subs   map[*subscriber]struct{}
	last   []byte // the latest snapshot, so late joiners start from it
	cancel func()
}

// subscriber is one page. msgs is closed when the race ends or when the
// page is dropped; slow, set before that close, says which.
type subscriber struct {
	msgs chan []byte
	slow bool
}

func newHub(r Races, log *slog.Logger, buf int) *hub {
	return &hub{races: r, log: log, buf: buf, feeds: map[string]*feed{}}
}

// subscribe joins runID's feed; ok is false when the race is not running in
// this process. Call leave when the page goes away.
func (h *hub) subscribe(runID string) (s *subscriber, leave func(), ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.feeds[runID]
	if f == nil {
		ch, cancel, live := h.races.Subscribe(runID)
		if !live {
			cancel()
			return nil, nil, false
		}
		f = &feed{id: runID, subs: map[*subscriber]struct{}{}, cancel: cancel}
		h.feeds[runID] = f
		go h.pump(f, ch)
	}
	s = &subscriber{msgs: make(chan []byte, h.buf)}
	if f.last != nil {
		s.msgs <- f.last
	}
	f.subs[s] = struct{}{}
	return s, func() { h.leave(f, s) }, true
}

// pump encodes each snapshot once and offers it to every subscriber.
func (h *hub) pump(f *feed, ch <-chan rollout.Snapshot) {
	for snap := range ch {
		b, err := json.Marshal(liveSnapshot(snap))
		if err != nil {
			h.log.Error("encode snapshot", "run", f.id, "err", err)
			continue
		}
		h.mu.Lock()
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
		h.mu.Unlock()
	}
	// The race ended (or the last page left): close what remains.
	h.mu.Lock()
	if h.feeds[f.id] == f {
		delete(h.feeds, f.id)
	}
	for s := range f.subs {
		delete(f.subs, s)
		close(s.msgs)
	}
	h.mu.Unlock()
}

func (h *hub) leave(f *feed, s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := f.subs[s]; ok {
		delete(f.subs, s)
		close(s.msgs)
	}
	if len(f.subs) == 0 && h.feeds[f.id] == f {
		// Nobody watches: drop the upstream subscription; pump ends.
		delete(h.feeds, f.id)
		f.cancel()
	}
}

// liveSnapshot keeps the feed small: the race view draws timings, so tool
// arguments, outputs and model text stay out (the transcript has them).
// Snapshots share turn slices with the runner, so this copies.
func liveSnapshot(s rollout.Snapshot) rollout.Snapshot {
	lanes := make([]rollout.LaneSnapshot, len(s.Lanes))
	for i, l := range s.Lanes {
		turns := make([]rollout.Turn, len(l.Turns))
		for j, t := range l.Turns {
			t.Text = ""
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
