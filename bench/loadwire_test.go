package bench

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"
)

func TestEventType(t *testing.T) {
	cases := []struct {
		name, in, want string
		ok             bool
	}{
		{"agentloop delta", `{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}`, "response.output_text.delta", true},
		{"type not first", `{"sequence_number":5,"type":"response.completed","response":{"id":"r"}}`, "response.completed", true},
		{"nested type is skipped", `{"item":{"type":"message"},"type":"response.output_item.added"}`, "response.output_item.added", true},
		{"nested only", `{"item":{"type":"message"}}`, "", false},
		{"type inside a string", `{"delta":"\"type\":\"x\"","type":"error"}`, "error", true},
		{"spaces", "{ \"type\" : \"response.created\" }", "response.created", true},
		{"value named type", `{"kind":"type","n":1}`, "", false},
		{"escaped value", `{"type":"a\"b"}`, "", false},
		{"not an object", `[1,2]`, "", false},
		{"truncated", `{"type":"resp`, "", false},
		{"empty", ``, "", false},
		{"array holding objects", `{"a":[{"type":"x"}],"type":"y"}`, "y", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := eventType([]byte(c.in))
			if ok != c.ok || string(got) != c.want {
				t.Fatalf("eventType(%s) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
			}
		})
	}
}

// FuzzEventType checks the scanner against encoding/json: it never panics,
// and on a valid object with a single, plain "type" key it finds that key's
// value.
func FuzzEventType(f *testing.F) {
	f.Add([]byte(`{"type":"response.output_text.delta","delta":"x"}`))
	f.Add([]byte(`{"item":{"type":"message"},"type":"y"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := eventType(b)
		if ok && !bytes.Contains(b, got) {
			t.Fatalf("result %q is not from the input", got)
		}
		var top map[string]json.RawMessage
		if json.Unmarshal(b, &top) != nil || bytes.Count(b, []byte(`"type"`)) != 1 {
			return
		}
		raw, has := top["type"]
		var want string
		// encoding/json rewrites escapes and invalid UTF-8; the scanner
		// reports the bytes as sent.
		if !has || json.Unmarshal(raw, &want) != nil || bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
			return
		}
		if !ok || string(got) != want {
			t.Fatalf("eventType(%s) = %q, %v; encoding/json says %q", b, got, ok, want)
		}
	})
}

func TestLatencyHistogramQuantiles(t *testing.T) {
	cases := []struct {
		name    string
		samples []time.Duration
		zeros   int
		q       float64
		lo, hi  time.Duration // the reported value lies in [lo, hi]
	}{
		{"single exact", []time.Duration{37 * time.Microsecond}, 0, 0.5, 37 * time.Microsecond, 38 * time.Microsecond},
		{"p99 of a tail", append(repeat(time.Millisecond, 98), 20*time.Millisecond, 20*time.Millisecond), 0, 0.99, 19700 * time.Microsecond, 20400 * time.Microsecond},
		{"median of ms", repeat(time.Millisecond, 10), 0, 0.5, time.Millisecond, 1016 * time.Microsecond},
		{"zeros dominate", []time.Duration{5 * time.Millisecond}, 9, 0.5, 0, time.Microsecond},
		{"coarse bucket stays within 1.6 %", []time.Duration{3 * time.Second}, 0, 0.5, 3 * time.Second, 3048 * time.Millisecond},
		{"max caps the bucket", []time.Duration{1500 * time.Microsecond}, 0, 0.99, 1500 * time.Microsecond, 1500 * time.Microsecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h latencyHistogram
			for _, d := range c.samples {
				h.add(d)
			}
			h.addZeros(c.zeros)
			got := h.quantile(c.q)
			if got < c.lo || got > c.hi {
				t.Fatalf("q%.2f = %v, want within [%v, %v]", c.q, got, c.lo, c.hi)
			}
		})
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func TestLatencyBucketsAreOrdered(t *testing.T) {
	prev := -1
	for d := time.Duration(0); d < 10*time.Second; d = d*11/10 + time.Microsecond {
		i := latencyBucket(d)
		if i < prev {
			t.Fatalf("bucket of %v is %d, below %d", d, i, prev)
		}
		if up := bucketUpper(i); d >= up {
			t.Fatalf("%v lands in bucket %d whose upper bound is %v", d, i, up)
		}
		prev = i
	}
}

func TestStreamCounting(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	cases := []struct {
		name     string
		arrivals []time.Duration // after t0
		usage    int
		tokens   int
		zeroGaps uint64
		gapCount uint64
		rate     float64
	}{
		{"one delta per token", []time.Duration{10 * ms, 11 * ms, 12 * ms, 13 * ms, 14 * ms}, 5, 5, 0, 4, 1000},
		{"coalesced deltas reconcile with usage", []time.Duration{10 * ms, 12 * ms, 14 * ms}, 5, 5, 2, 4, 1000},
		{"no usage counts deltas", []time.Duration{10 * ms, 20 * ms}, -1, 2, 0, 1, 100},
		{"single token has no rate", []time.Duration{10 * ms}, 1, 1, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var gaps latencyHistogram
			clk := streamClock{sent: t0}
			for _, a := range c.arrivals {
				clk.delta(t0.Add(a), &gaps)
			}
			tokens := clk.finish(c.usage, &gaps)
			if tokens != c.tokens {
				t.Fatalf("tokens %d, want %d", tokens, c.tokens)
			}
			if gaps.total != c.gapCount || gaps.counts[0] != c.zeroGaps {
				t.Fatalf("gaps %d (%d zero), want %d (%d zero)", gaps.total, gaps.counts[0], c.gapCount, c.zeroGaps)
			}
			if r := clk.rate(tokens); r < c.rate*0.999 || r > c.rate*1.001 {
				t.Fatalf("rate %.1f, want %.1f", r, c.rate)
			}
		})
	}
}

func TestParseSampleLine(t *testing.T) {
	cases := []struct {
		line, name string
		value      float64
		ok         bool
	}{
		{"process_cpu_seconds_total 12.5", "process_cpu_seconds_total", 12.5, true},
		{`agentloop_requests_total{engine="v1",status="completed",transport="http"} 3`, `agentloop_requests_total{engine="v1",status="completed",transport="http"}`, 3, true},
		{`x{note="a b"} 1e3 1700000000`, `x{note="a b"}`, 1000, true},
		{"# HELP go_goroutines Number of goroutines.", "", 0, false},
		{"", "", 0, false},
		{"broken", "", 0, false},
		{"name notanumber", "", 0, false},
	}
	for _, c := range cases {
		name, v, ok := parseSampleLine(c.line)
		if ok != c.ok || name != c.name || v != c.value {
			t.Errorf("parseSampleLine(%q) = %q, %v, %v; want %q, %v, %v", c.line, name, v, ok, c.name, c.value, c.ok)
		}
	}
}

func TestEngineGapHistogramDelta(t *testing.T) {
	sample := func(counts ...float64) metricsSample {
		les := []string{"0.001", "0.005", "0.01", "+Inf"}
		m := metricsSample{values: map[string]float64{}}
		for i, le := range les {
			// Two transports: the delta sums them.
			m.values[`agentloop_inter_token_latency_seconds_bucket{transport="http",le="`+le+`"}`] = counts[i]
			m.values[`agentloop_inter_token_latency_seconds_bucket{transport="websocket",le="`+le+`"}`] = counts[i]
		}
		return m
	}
	cases := []struct {
		name          string
		before, after metricsSample
		p99, within5  float64
		empty         bool
	}{
		// 100 new gaps: 50 ≤1 ms, 40 in (1,5], 10 in (5,10]. The 99th
		// lies 9/10 into the (5,10] ms bucket.
		{"interpolates", sample(10, 10, 10, 10), sample(60, 100, 110, 110), 0.0095, 0.9, false},
		{"nothing new", sample(5, 5, 5, 5), sample(5, 5, 5, 5), 0, 0, true},
		{"tail beyond the last bound", sample(0, 0, 0, 0), sample(0, 0, 0, 50), 0.01, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := histogramDelta(c.before, c.after, "agentloop_inter_token_latency_seconds")
			if c.empty {
				if b != nil {
					t.Fatalf("want no histogram, got %v", b)
				}
				return
			}
			if got := b.quantile(0.99); got < c.p99*0.999 || got > c.p99*1.001 {
				t.Fatalf("p99 %v, want %v", got, c.p99)
			}
			if got := b.fractionWithin(0.005); got != c.within5 {
				t.Fatalf("within 5 ms %v, want %v", got, c.within5)
			}
		})
	}
}
