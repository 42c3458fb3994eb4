package bench_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"agentloop/app"
	"agentloop/app/apptest"
	"agentloop/bench"
)

// unmodelled turns the modelled costs off: the overhead is what is measured.
func unmodelled(c *app.Config) { c.Unmodelled = true }

func TestOverheadMeasuresEveryPath(t *testing.T) {
	a := apptest.Start(t, unmodelled)
	rows, err := bench.Overhead(context.Background(), bench.OverheadConfig{BaseURL: a.URL(), Sizes: []int{2000}, Repeats: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("rows %v", rows)
	}
	for _, p := range bench.OverheadPaths {
		if rows[0].Median[p] <= 0 {
			t.Errorf("path %s has no measurement", p)
		}
	}
	var out bytes.Buffer
	bench.FormatOverhead(&out, rows)
	if !strings.Contains(out.String(), "2k") || strings.Count(out.String(), "\n") != 2 {
		t.Fatalf("table:\n%s", out.String())
	}
}

// BenchmarkOverhead reports the median pre-inference time of each path at
// 1k and 10k tokens of context (agentloop bench overhead runs all sizes).
func BenchmarkOverhead(b *testing.B) {
	a := apptest.Start(b, unmodelled)
	for _, size := range []int{1000, 10000} {
		b.Run(itoa(size)+"tokens", func(b *testing.B) {
			var rows []bench.OverheadRow
			for b.Loop() {
				var err error
				rows, err = bench.Overhead(context.Background(), bench.OverheadConfig{BaseURL: a.URL(), Sizes: []int{size}, Repeats: 3})
				if err != nil {
					b.Fatal(err)
				}
			}
			for _, p := range bench.OverheadPaths {
				b.ReportMetric(float64(rows[0].Median[p].Microseconds()), p+"-µs")
			}
		})
	}
}

func itoa(n int) string {
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
