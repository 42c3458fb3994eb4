package bench_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"agentloop/app/apptest"
	"agentloop/bench"
)

func TestLoadCountsEveryToken(t *testing.T) {
	a := apptest.Start(t)
	for _, transport := range []string{"ws", "sse"} {
		t.Run(transport, func(t *testing.T) {
			const perStream = 40
			rep, err := bench.Load(context.Background(), bench.LoadConfig{BaseURL: a.URL(), Transport: transport, Conns: 3,
				Model: "burst", Duration: 300 * time.Millisecond, OutputTokens: perStream, SharedProcess: true, EngineTraces: true})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Errors != 0 {
				t.Fatalf("%d errors: %v", rep.Errors, rep.ErrorSamples)
			}
			if rep.Streams < 3 {
				t.Fatalf("only %d streams completed", rep.Streams)
			}
			if rep.Tokens != int64(rep.Streams*perStream) {
				t.Fatalf("%d tokens over %d streams of %d", rep.Tokens, rep.Streams, perStream)
			}
			if rep.Deltas < 1 || rep.Deltas > rep.Tokens || rep.CoalescedTokens != rep.Tokens-rep.Deltas {
				t.Fatalf("deltas %d, coalesced %d, tokens %d", rep.Deltas, rep.CoalescedTokens, rep.Tokens)
			}
			if rep.Engine.TokensStreamed != float64(rep.Tokens) {
				t.Fatalf("the engine counted %.0f tokens, the clients %d", rep.Engine.TokensStreamed, rep.Tokens)
			}
			// A stream whose tokens all came in one delta has no rate (0): on
			// a busy machine most may, so only a negative median is wrong;
			// the traced streams below have rates.
			if rep.TTFT.P50 <= 0 || rep.StreamTPS.P50 < 0 || rep.TargetTPS != 4000 {
				t.Fatalf("ttft %+v, rate %+v, target %.0f", rep.TTFT, rep.StreamTPS, rep.TargetTPS)
			}
			// A stream whose tokens all arrived in one delta (a busy machine
			// coalesces) has no wire rate to compare; every other is traced.
			if rep.WireVsEngine == nil || rep.TracedStreams < 1 || rep.TracedStreams > rep.Streams {
				t.Fatalf("traces compared for %d of %d streams", rep.TracedStreams, rep.Streams)
			}
			if rep.EngineCPUPerToken <= 0 || rep.ClientCPUPerToken <= 0 || rep.Host.ClientCPUSeconds <= 0 {
				t.Fatalf("CPU per token: engine %.3f µs, clients %.3f µs (%.3f s)", rep.EngineCPUPerToken, rep.ClientCPUPerToken, rep.Host.ClientCPUSeconds)
			}
			if want := float64(rep.StreamsAtTarget) / float64(rep.Streams); rep.StreamsAtTargetShare != want {
				t.Fatalf("share at target %.4f, want %d/%d", rep.StreamsAtTargetShare, rep.StreamsAtTarget, rep.Streams)
			}
			var out bytes.Buffer
			bench.FormatLoad(&out, rep)
			for _, want := range []string{transport + ", 3 conns", "TTFT", "token gap", "p99.9", "per stream", "CPU/token"} {
				if !strings.Contains(out.String(), want) {
					t.Fatalf("report lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

func TestLoadRejectsBadConfig(t *testing.T) {
	cases := []bench.LoadConfig{
		{BaseURL: "http://127.0.0.1:1", Transport: "grpc", Conns: 1, OutputTokens: 1, Duration: time.Second},
		{BaseURL: "http://127.0.0.1:1", Transport: "ws", Conns: 0, OutputTokens: 1, Duration: time.Second},
		{BaseURL: "http://127.0.0.1:1", Transport: "ws", Conns: 1, OutputTokens: 0, Duration: time.Second},
	}
	for _, c := range cases {
		if _, err := bench.Load(context.Background(), c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

func TestIdleHoldsEveryConnection(t *testing.T) {
	a := apptest.Start(t)
	const n = 20
	rep, err := bench.Idle(context.Background(), bench.IdleConfig{BaseURL: a.URL(), Conns: n, Model: "burst", SharedProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Opened != n || rep.Held != n || rep.Errors != 0 {
		t.Fatalf("opened %d, held %d of %d, errors %v", rep.Opened, rep.Held, n, rep.ErrorSamples)
	}
	if rep.GaugeDelta != n {
		t.Fatalf("the engine's connection gauge rose by %.0f, want %d", rep.GaugeDelta, n)
	}
	if rep.GoroutinesPer <= 0 {
		t.Fatalf("goroutines per connection %.2f", rep.GoroutinesPer)
	}
}

// BenchmarkLoad runs the load generator at small scale against an engine in
// this process: 32 streams on spark for one second per iteration.
// agentloop bench load runs the full-size measurement (docs/capacity.md).
func BenchmarkLoad(b *testing.B) {
	a := apptest.Start(b)
	for _, transport := range []string{"ws", "sse"} {
		b.Run(transport, func(b *testing.B) {
			var rep *bench.LoadReport
			for b.Loop() {
				var err error
				rep, err = bench.Load(context.Background(), bench.LoadConfig{BaseURL: a.URL(), Transport: transport, Conns: 32,
					Model: "spark", Duration: time.Second, Ramp: 200 * time.Millisecond, OutputTokens: 500, SharedProcess: true})
				if err != nil {
					b.Fatal(err)
				}
				if rep.Errors > 0 {
					b.Fatalf("%d errors: %v", rep.Errors, rep.ErrorSamples)
				}
			}
			b.ReportMetric(rep.TokensPerSecond, "tok/s")
			b.ReportMetric(rep.StreamTPS.Min, "min-stream-tok/s")
			b.ReportMetric(rep.TTFT.P99, "ttft-p99-ms")
			b.ReportMetric(rep.Gap.P99, "gap-p99-ms")
			b.ReportMetric(rep.Engine.CPUCores, "cores")
		})
	}
}
