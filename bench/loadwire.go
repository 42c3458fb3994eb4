package bench

import (
	"bytes"
	"math/bits"
	"time"
)

// eventType returns the value of the top-level "type" key of one JSON event
// without decoding it: the load generator reads hundreds of thousands of
// events per second and must not spend the machine's cores on
// encoding/json. Nested objects (item, part, response) are skipped, so their
// own "type" keys never match. It reports false when there is no such key
// or the input is not an object it can scan.
func eventType(b []byte) ([]byte, bool) {
	// Fast path: agentloop and most servers write "type" first.
	const head = `{"type":"`
	if bytes.HasPrefix(b, []byte(head)) {
		if end, plain := stringEnd(b, len(head)-1); end > 0 && plain {
			return b[len(head) : end-1], true
		}
	}
	depth := 0
	for i := 0; i < len(b); {
		switch b[i] {
		case '{', '[':
			depth++
			i++
		case '}', ']':
			depth--
			i++
		case '"':
			end, plain := stringEnd(b, i)
			if end < 0 {
				return nil, false
			}
			if depth == 1 && plain && string(b[i+1:end-1]) == "type" {
				k := skipSpace(b, end)
				if k < len(b) && b[k] == ':' {
					k = skipSpace(b, k+1)
					if k < len(b) && b[k] == '"' {
						vend, vplain := stringEnd(b, k)
						if vend > 0 && vplain {
							return b[k+1 : vend-1], true
						}
						return nil, false
					}
				}
			}
			i = end
		default:
			i++
		}
	}
	return nil, false
}

// stringEnd returns the index just past the JSON string that opens at
// b[start] (a quote), and whether it holds no escapes; -1 if unterminated.
func stringEnd(b []byte, start int) (int, bool) {
	plain := true
	for i := start + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			plain = false
			i++
		case '"':
			return i + 1, plain
		}
	}
	return -1, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// isDelta reports whether an event type carries output tokens.
func isDelta(typ []byte) bool {
	return string(typ) == "response.output_text.delta" || string(typ) == "response.function_call_arguments.delta"
}

// isTerminalType reports whether an event type ends a stream.
func isTerminalType(typ []byte) bool {
	switch string(typ) {
	case "response.completed", "response.incomplete", "response.failed", "error":
		return true
	}
	return false
}

// latencyHistogram counts durations in buckets of 1 µs up to 128 µs, then
// 64 buckets per power of two (about 1.6 % wide), up to 2^31 µs. Each
// client owns one; they are merged at the end, so recording a gap is an
// index computation and an increment, without locks or growth.
type latencyHistogram struct {
	counts [latencyBuckets]uint64
	total  uint64
	max    time.Duration
}

const (
	latencyLinear  = 128
	latencySub     = 64
	latencyOctaves = 25
	latencyBuckets = latencyLinear + latencyOctaves*latencySub
)

func latencyBucket(d time.Duration) int {
	us := uint64(max(d, 0) / time.Microsecond)
	if us < latencyLinear {
		return int(us)
	}
	e := bits.Len64(us) - 7 // us>>e is in [64, 128)
	if e > latencyOctaves {
		return latencyBuckets - 1
	}
	return latencyLinear + (e-1)*latencySub + int(us>>uint(e)) - latencySub
}

// bucketUpper is the exclusive upper bound of bucket i.
func bucketUpper(i int) time.Duration {
	if i < latencyLinear {
		return time.Duration(i+1) * time.Microsecond
	}
	e := (i-latencyLinear)/latencySub + 1
	sub := (i-latencyLinear)%latencySub + latencySub
	return time.Duration(uint64(sub+1)<<uint(e)) * time.Microsecond
}

func (h *latencyHistogram) add(d time.Duration) {
	h.counts[latencyBucket(d)]++
	h.total++
	if d > h.max {
		h.max = d
	}
}

func (h *latencyHistogram) addZeros(n int) {
	if n > 0 {
		h.counts[0] += uint64(n)
		h.total += uint64(n)
	}
}

func (h *latencyHistogram) merge(o *latencyHistogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.max = max(h.max, o.max)
}

// quantile returns the upper bound of the bucket holding quantile q, so a
// reported p99 is never below the true one by more than a bucket's width.
func (h *latencyHistogram) quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(q*float64(h.total-1)) + 1
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(bucketUpper(i), max(h.max, time.Microsecond))
		}
	}
	return h.max
}

// streamClock records one stream's arrivals, counted as docs/decisions.md,
// "Load-test counting", says:
// a delta carrying k tokens counts k tokens, and adds k-1 gaps of zero.
// Clients cannot see k without a tokenizer, so deltas are counted as they
// arrive and reconciled with usage.output_tokens at the terminal event: the
// difference is exactly the tokens that rode in multi-token deltas.
type streamClock struct {
	sent, first, last time.Time
	deltas            int
	steadyDeltas      int // deltas that arrived inside the steady window
}

func (s *streamClock) delta(now time.Time, gaps *latencyHistogram) {
	if s.deltas == 0 {
		s.first = now
	} else {
		gaps.add(now.Sub(s.last))
	}
	s.last = now
	s.deltas++
}

// finish returns the stream's tokens given the usage the server reported
// (-1 when it reported none).
func (s *streamClock) finish(outputTokens int, gaps *latencyHistogram) int {
	if outputTokens < 0 {
		return s.deltas
	}
	gaps.addZeros(outputTokens - s.deltas)
	return outputTokens
}

// rate is the stream's tokens/s: (tokens-1) over first to last token.
func (s *streamClock) rate(tokens int) float64 {
	span := s.last.Sub(s.first)
	if tokens < 2 || span <= 0 {
		return 0
	}
	return float64(tokens-1) / span.Seconds()
}
