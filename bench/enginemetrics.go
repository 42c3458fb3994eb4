package bench

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"agentloop/internal/hostcpu"
)

// metricsSample is one scrape of the engine's /metrics: each sample's value
// by its name with labels as written, e.g. `go_goroutines` or
// `agentloop_requests_total{engine="v1",status="completed",transport="http"}`.
type metricsSample struct {
	at     time.Time
	values map[string]float64
}

// get reads a metric that has one series per process, whatever labels the
// server adds to every series (agentloop adds its replica id).
func (m metricsSample) get(name string) float64 { return m.sum(name) }

// sum adds every sample of a metric whatever its labels.
func (m metricsSample) sum(name string) float64 {
	var s float64
	for k, v := range m.values {
		if k == name || (strings.HasPrefix(k, name) && len(k) > len(name) && k[len(name)] == '{') {
			s += v
		}
	}
	return s
}

// has says whether the scrape holds a metric, whatever its labels (an
// older engine lacks some).
func (m metricsSample) has(name string) bool {
	for k := range m.values {
		if k == name || (strings.HasPrefix(k, name) && len(k) > len(name) && k[len(name)] == '{') {
			return true
		}
	}
	return false
}

// scrapeMetrics reads the Prometheus text exposition at url.
func scrapeMetrics(ctx context.Context, c *http.Client, url string, header http.Header) (metricsSample, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return metricsSample{}, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return metricsSample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return metricsSample{}, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	s := metricsSample{at: time.Now(), values: map[string]float64{}}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := parseSampleLine(sc.Text())
		if ok {
			s.values[name] = value
		}
	}
	return s, sc.Err()
}

// parseSampleLine splits `name{labels} value [timestamp]`.
func parseSampleLine(line string) (string, float64, bool) {
	if line == "" || line[0] == '#' {
		return "", 0, false
	}
	end := strings.IndexByte(line, ' ')
	if i := strings.IndexByte(line, '{'); i >= 0 && (end < 0 || i < end) {
		// Label values may hold spaces: the name ends after the closing brace.
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return "", 0, false
		}
		end = j + 1
	}
	if end <= 0 || end >= len(line) {
		return "", 0, false
	}
	fields := strings.Fields(line[end:])
	if len(fields) == 0 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", 0, false
	}
	return line[:end], v, true
}

// EngineUsage is what the engine's own /metrics says it used over a run.
// When the load generator started the engine in its own process, the
// process figures include the clients.
type EngineUsage struct {
	SharedProcess bool    `json:"shared_process"`
	CPUSeconds    float64 `json:"cpu_seconds"`
	CPUCores      float64 `json:"cpu_cores"` // CPU seconds per wall second
	RSSBefore     float64 `json:"rss_before_bytes"`
	RSSUnderLoad  float64 `json:"rss_under_load_bytes"`
	HeapUnderLoad float64 `json:"heap_inuse_under_load_bytes"`
	StackUnder    float64 `json:"stack_inuse_under_load_bytes"`
	Goroutines    float64 `json:"goroutines_under_load"`
	GCCycles      float64 `json:"gc_cycles"`
	// TokensStreamed is the engine's count of output tokens over the run.
	TokensStreamed float64 `json:"engine_tokens_streamed"`
	// The engine's own inter-token gaps as it wrote them (its
	// agentloop_inter_token_latency_seconds histogram over the run): set
	// beside the clients' figures, they tell the engine's delays from the
	// load generator's. The p99 is interpolated within a bucket.
	EngineGapP99     float64 `json:"engine_gap_p99_ms,omitempty"`
	EngineGapWithin5 float64 `json:"engine_gaps_within_5ms,omitempty"` // fraction
}

func engineUsage(before, under, after metricsSample, shared bool) EngineUsage {
	u := EngineUsage{SharedProcess: shared,
		CPUSeconds:     after.get("process_cpu_seconds_total") - before.get("process_cpu_seconds_total"),
		RSSBefore:      before.get("process_resident_memory_bytes"),
		RSSUnderLoad:   under.get("process_resident_memory_bytes"),
		HeapUnderLoad:  under.get("go_memstats_heap_inuse_bytes"),
		StackUnder:     under.get("go_memstats_stack_inuse_bytes"),
		Goroutines:     under.get("go_goroutines"),
		GCCycles:       after.sum("go_gc_duration_seconds_count") - before.sum("go_gc_duration_seconds_count"),
		TokensStreamed: after.get("agentloop_generation_tokens_total") - before.get("agentloop_generation_tokens_total"),
	}
	if wall := after.at.Sub(before.at).Seconds(); wall > 0 {
		u.CPUCores = u.CPUSeconds / wall
	}
	if b := histogramDelta(before, after, "agentloop_inter_token_latency_seconds"); len(b) > 0 {
		u.EngineGapP99 = b.quantile(0.99) * 1000
		u.EngineGapWithin5 = b.fractionWithin(0.005)
	}
	return u
}

// cumulativeBuckets is a Prometheus histogram: cumulative counts by upper
// bound, in ascending order, the last bound +Inf.
type cumulativeBuckets []struct{ le, count float64 }

// histogramDelta sums a histogram's buckets over every label set and
// returns how much each grew between two scrapes.
func histogramDelta(before, after metricsSample, name string) cumulativeBuckets {
	prefix := name + "_bucket{"
	byLE := map[float64]float64{}
	for k, v := range after.values {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		i := strings.Index(k, `le="`)
		if i < 0 {
			continue
		}
		rest := k[i+4:]
		le, err := strconv.ParseFloat(rest[:strings.IndexByte(rest, '"')], 64)
		if err != nil {
			continue
		}
		byLE[le] += v - before.values[k]
	}
	var out cumulativeBuckets
	for le, c := range byLE {
		out = append(out, struct{ le, count float64 }{le, c})
	}
	slices.SortFunc(out, func(a, b struct{ le, count float64 }) int { return cmp.Compare(a.le, b.le) })
	if len(out) == 0 || out[len(out)-1].count == 0 {
		return nil
	}
	return out
}

// quantile interpolates linearly within the bucket holding q, as
// Prometheus's histogram_quantile does.
func (b cumulativeBuckets) quantile(q float64) float64 {
	total := b[len(b)-1].count
	rank := q * total
	prevLE, prevCount := 0.0, 0.0
	for _, x := range b {
		if x.count >= rank {
			if math.IsInf(x.le, 1) {
				return prevLE
			}
			if x.count == prevCount {
				return x.le
			}
			return prevLE + (x.le-prevLE)*(rank-prevCount)/(x.count-prevCount)
		}
		prevLE, prevCount = x.le, x.count
	}
	return prevLE
}

// fractionWithin is the share of observations at most le (a bucket bound).
func (b cumulativeBuckets) fractionWithin(le float64) float64 {
	total := b[len(b)-1].count
	for _, x := range b {
		if x.le == le {
			return x.count / total
		}
	}
	return 0
}

// hostCPU is the machine's CPU time, busy and total, from /proc/stat (Linux;
// zero elsewhere), and this process's own CPU time. The load generator shares
// the machine with the engine and, on a shared machine, with other work: a
// report says how busy the whole machine was, not only the engine.
type hostCPU struct {
	at          time.Time
	busy, all   float64 // seconds summed over cores
	steal       float64 // seconds the hypervisor ran something else on our cores
	self        float64 // this process, seconds
	haveMachine bool
}

func readHostCPU() hostCPU {
	s := hostcpu.Read()
	return hostCPU{at: s.At, busy: s.Busy, all: s.All, steal: s.Steal, self: s.Self, haveMachine: s.HaveMachine}
}

// HostUsage is the machine's CPU over a run, in cores (CPU seconds per wall
// second).
type HostUsage struct {
	MachineBusyCores float64 `json:"machine_busy_cores"` // every process, the engine included
	MachineCores     float64 `json:"machine_cores"`
	// StealCores is CPU the hypervisor gave to other guests while ours
	// wanted it: a run with much of it was disturbed, however quiet the
	// machine looked from inside.
	StealCores       float64 `json:"machine_steal_cores"`
	ClientCores      float64 `json:"client_cores"` // this process
	ClientCPUSeconds float64 `json:"client_cpu_seconds"`
}

func hostUsage(a, b hostCPU) HostUsage {
	wall := b.at.Sub(a.at).Seconds()
	if wall <= 0 {
		return HostUsage{}
	}
	u := HostUsage{ClientCPUSeconds: b.self - a.self}
	u.ClientCores = u.ClientCPUSeconds / wall
	if a.haveMachine && b.haveMachine {
		u.MachineBusyCores = (b.busy - a.busy) / wall
		u.MachineCores = (b.all - a.all) / wall
		u.StealCores = (b.steal - a.steal) / wall
	}
	return u
}
