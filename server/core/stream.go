package core

import (
	"time"
	"unsafe"

	"agentloop/api"
	"agentloop/policy"
)

// Sink receives a response's events. Each event is one complete JSON object;
// Flush ends a batch (SSE flushes, WebSocket frames are already sent).
type Sink interface {
	Event(typ string, b []byte) error
	Flush() error
}

// Discard is the sink of a non-streaming request.
type Discard struct{}

func (Discard) Event(string, []byte) error { return nil }

func (Discard) Flush() error { return nil }

// plannedItem is one output item and the token pieces it streams as.
type plannedItem struct {
	item   api.Item
	pieces []string
	// filler tokens follow pieces in an exact-length reply (see
	// policy.OutputItem.Filler): their text is written as they stream, and
	// the item's whole text only when it closes, so a reply that may run
	// to 128,000 tokens holds what it has streamed, not what it may.
	filler   int
	expanded bool // the item's text includes the filler
}

// tokenCount is the number of tokens the item streams.
func (p *plannedItem) tokenCount() int { return len(p.pieces) + p.filler }

// appendText appends the text of tokens [from, to).
func (p *plannedItem) appendText(dst []byte, from, to int) []byte {
	for i := from; i < min(to, len(p.pieces)); i++ {
		dst = append(dst, p.pieces[i]...)
	}
	if to > len(p.pieces) {
		dst = policy.AppendFiller(dst, max(from-len(p.pieces), 0), to-len(p.pieces), len(p.pieces) == 0)
	}
	return dst
}

// piece returns token i's text.
func (p *plannedItem) piece(i int) string {
	if i < len(p.pieces) {
		return p.pieces[i]
	}
	return policy.FillerPiece(i-len(p.pieces), len(p.pieces) == 0)
}

// blank says whether tokens [from, to) carry no text: they only complete
// a split character. Filler words always carry text.
func (p *plannedItem) blank(from, to int) bool {
	if to > len(p.pieces) {
		return false
	}
	for _, piece := range p.pieces[from:to] {
		if piece != "" {
			return false
		}
	}
	return true
}

// expand writes the item's whole text, filler included, once: when it
// closes on the stream or when the response is settled.
func (p *plannedItem) expand() *api.Item {
	if p.filler > 0 && !p.expanded {
		p.item.Content[0].Text = string(p.appendText(nil, 0, p.tokenCount()))
		p.expanded = true
	}
	return &p.item
}

// streamer turns released tokens into events. When the consumer is behind,
// all released tokens of an item go out as one delta.
type streamer struct {
	out    Sink
	quiet  bool // nobody reads the events (a non-streaming request): only count tokens
	buf    []byte
	seq    int
	items  []plannedItem
	cur    int // item being streamed
	base   int // output index of items[0]: the items earlier segments streamed
	piece  int // next piece within it
	opened bool
	sent   int
	text   []byte // scratch for a delta of several tokens
	// between, when set, is asked after each item closes whether the
	// response stops there (Via.BetweenItems).
	between func() bool
	// steering, when set, is the response's (steer.go): each wake-up
	// acknowledges what it took.
	steering *Steering
	// wasQueued: response.created went out when the response was queued
	// (background.go); begin sends only response.in_progress.
	wasQueued bool

	// Inter-token gaps as written, for the metrics: carried counts tokens
	// released without text of their own, which ride with the next delta.
	gaps      tokenGaps
	gapBounds []float64
	lastDelta time.Time
	carried   int
}

// delivered records the gaps of a delta carrying k tokens, just written.
func (s *streamer) delivered(k int) {
	now := time.Now()
	if s.lastDelta.IsZero() {
		s.gaps.zeros(k - 1)
	} else {
		s.gaps.add(now.Sub(s.lastDelta), k-1, s.gapBounds)
	}
	s.lastDelta = now
}

func (s *streamer) emit(typ string) error {
	err := s.out.Event(typ, s.buf)
	s.seq++
	s.buf = s.buf[:0]
	return err
}

func (s *streamer) open(idx int, it *api.Item) error {
	started := *it
	started.Status = "in_progress"
	if started.Type == api.TypeMessage {
		started.Content = []api.Part{}
	} else {
		started.Arguments = ""
	}
	s.buf = api.AppendOutputItemEvent(s.buf, api.EventOutputItemAdded, s.seq, idx, &started)
	if err := s.emit(api.EventOutputItemAdded); err != nil {
		return err
	}
	if it.Type == api.TypeMessage {
		s.buf = api.AppendContentPartEvent(s.buf, api.EventContentPartAdded, s.seq, it.ID, idx, 0, "")
		return s.emit(api.EventContentPartAdded)
	}
	return nil
}

func (s *streamer) close(idx int, it *api.Item) error {
	if it.Type == api.TypeMessage {
		text := it.Content[0].Text
		s.buf = api.AppendTextDone(s.buf, s.seq, it.ID, idx, 0, text)
		if err := s.emit(api.EventOutputTextDone); err != nil {
			return err
		}
		s.buf = api.AppendContentPartEvent(s.buf, api.EventContentPartDone, s.seq, it.ID, idx, 0, text)
		if err := s.emit(api.EventContentPartDone); err != nil {
			return err
		}
	} else if it.Type == api.TypeCustomToolCall {
		s.buf = api.AppendCustomToolCallInputDone(s.buf, s.seq, it.ID, idx, it.Arguments)
		if err := s.emit(api.EventCustomToolCallInputDone); err != nil {
			return err
		}
	} else {
		s.buf = api.AppendArgumentsDone(s.buf, s.seq, it.ID, idx, it.Name, it.Arguments)
		if err := s.emit(api.EventArgumentsDone); err != nil {
			return err
		}
	}
	s.buf = api.AppendOutputItemEvent(s.buf, api.EventOutputItemDone, s.seq, idx, it)
	return s.emit(api.EventOutputItemDone)
}

// advance emits events for tokens up to released.
func (s *streamer) advance(released int) error {
	for s.cur < len(s.items) && s.sent < released {
		pi := &s.items[s.cur]
		n := min(released-s.sent, pi.tokenCount()-s.piece)
		if s.quiet {
			// A non-streaming reply is built once, when it is settled.
			if !pi.blank(s.piece, s.piece+n) {
				s.delivered(n + s.carried)
				s.carried = 0
			} else {
				s.carried += n
			}
		} else if err := s.streamDelta(pi, n); err != nil {
			return err
		}
		s.piece += n
		s.sent += n
		if s.piece == pi.tokenCount() {
			if !s.quiet {
				if err := s.close(s.base+s.cur, pi.expand()); err != nil {
					return err
				}
			}
			s.cur++
			s.piece = 0
			s.opened = false
			if s.between != nil && s.between() {
				return handOver{}
			}
		}
	}
	return nil
}

// streamDelta emits the delta of the item's next n tokens, opening the item
// first.
func (s *streamer) streamDelta(pi *plannedItem, n int) error {
	if !s.opened {
		if err := s.open(s.base+s.cur, &pi.item); err != nil {
			return err
		}
		s.opened = true
	}
	if pi.blank(s.piece, s.piece+n) {
		// A token that only completes a split character carries no
		// text of its own; it goes out with the next delta.
		s.carried += n
		return nil
	}
	var delta string
	if n == 1 {
		delta = pi.piece(s.piece)
	} else {
		// The delta of several tokens is appended from the scratch bytes:
		// the encoder reads them once, before the scratch is written again,
		// so they need no string of their own.
		s.text = pi.appendText(s.text[:0], s.piece, s.piece+n)
		delta = unsafe.String(unsafe.SliceData(s.text), len(s.text))
	}
	if pi.item.Type == api.TypeMessage {
		s.buf = api.AppendTextDelta(s.buf, s.seq, pi.item.ID, s.base+s.cur, 0, delta)
		if err := s.emit(api.EventOutputTextDelta); err != nil {
			return err
		}
	} else if pi.item.Type == api.TypeCustomToolCall {
		s.buf = api.AppendCustomToolCallInputDelta(s.buf, s.seq, pi.item.ID, s.base+s.cur, delta)
		if err := s.emit(api.EventCustomToolCallInputDelta); err != nil {
			return err
		}
	} else {
		s.buf = api.AppendArgumentsDelta(s.buf, s.seq, pi.item.ID, s.base+s.cur, delta)
		if err := s.emit(api.EventArgumentsDelta); err != nil {
			return err
		}
	}
	s.delivered(n + s.carried)
	s.carried = 0
	return nil
}

// Outcome is how a generation ended.
type Outcome struct {
	Response *api.Response
	Snapshot []byte
	State    *ChainState // what the connection cache keeps; nil when the response is not kept
	Err      *api.Error  // set when the response failed after streaming began
	Terminal string      // the terminal event; "" for a cancelled response
}

// streamed is how a response's streaming ended: what finalize settles it
// from.
type streamed struct {
	items     []plannedItem
	total     int // tokens planned
	sent      int // tokens streamed
	cur       int // the item being streamed when it ended
	matched   int // prompt tokens found in the prefix cache
	truncated bool
	cancelled bool // the client went away, or a write failed
	stopped   bool // the engine is shutting down
	expired   bool // a paused response waited too long for response.append
	steered   bool // stopped between items to hand over (steer.go)
}

// pauses says whether a prototype response pauses after this segment: it
// sampled a function call and was not cut short.
func (g *streamed) pauses() bool {
	if g.truncated {
		return false
	}
	for i := range g.items {
		if g.items[i].item.Type == api.TypeFunctionCall {
			return true
		}
	}
	return false
}

// begin sends response.created and response.in_progress.
func (s *streamer) begin(resp *api.Response) error {
	if s.quiet {
		return nil // nobody reads the events: do not build two snapshots
	}
	snapshot := api.MarshalResponse(resp)
	var err error
	if !s.wasQueued {
		s.buf = api.AppendResponseEvent(s.buf, api.EventCreated, s.seq, snapshot)
		err = s.emit(api.EventCreated)
	}
	if err == nil {
		s.buf = api.AppendResponseEvent(s.buf, api.EventInProgress, s.seq, snapshot)
		err = s.emit(api.EventInProgress)
	}
	if err == nil {
		err = s.out.Flush()
	}
	return err
}

// keptOutput is what was streamed in full: the items the response keeps.
func (g *streamed) keptOutput() []ctxItem {
	output := make([]ctxItem, 0, len(g.items))
	for i := range g.items {
		if i < g.cur || (i == g.cur && g.sent == g.total) {
			output = append(output, ctxItem{Item: *g.items[i].expand()})
		}
	}
	return output
}

// TextStream streams one text item, piece by piece, as a response's
// streamer does: how the transports' benchmarks drive their sinks with
// the engine's own events.
type TextStream struct {
	st   streamer
	item plannedItem
}

// NewTextStream streams pieces, one token each, to out; the item starts
// again once all are sent.
func NewTextStream(out Sink, pieces []string) *TextStream {
	return &TextStream{st: streamer{out: out, buf: make([]byte, 0, 512)},
		item: plannedItem{item: api.Item{Type: api.TypeMessage, ID: api.NewID("msg"), Status: "completed",
			Role: "assistant", Content: []api.Part{{Type: "output_text"}}}, pieces: pieces}}
}

// Advance streams the next n tokens as one delta (the item's opening
// events first, when it starts). n must not pass the item's end.
func (t *TextStream) Advance(n int) error {
	s := &t.st
	if s.cur == len(s.items) || s.piece+n > len(t.item.pieces) {
		s.items, s.cur, s.piece, s.sent, s.opened = []plannedItem{t.item}, 0, 0, 0, false
	}
	return s.advance(s.sent + n)
}
