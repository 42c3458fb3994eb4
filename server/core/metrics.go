package core

import (
	"strconv"
	"sync"
	"time"

	"agentloop/inference"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the engine's Prometheus metrics, named after vLLM's where they
// fit. Each Metrics has its own registry, so tests can build many engines.
type Metrics struct {
	reg         *prometheus.Registry
	registerer  prometheus.Registerer // reg, with the replica label when there is one
	requests    *prometheus.CounterVec
	ttft        *prometheus.HistogramVec
	tpot        *prometheus.HistogramVec
	e2e         *prometheus.HistogramVec
	stages      *prometheus.HistogramVec
	cache       *prometheus.CounterVec
	itl         *gapHistogram
	running     *prometheus.GaugeVec
	waiting     *prometheus.GaugeVec
	connections prometheus.Gauge
	stalls      prometheus.Counter
	busy        prometheus.Counter
	outTokens   prometheus.Counter
	prefixQuery prometheus.Counter
	prefixHit   prometheus.Counter
	stateDrops  prometheus.Counter
}

// NewMetrics registers the engine's metrics in a fresh registry.
func NewMetrics(replica string) *Metrics {
	latency := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentloop_requests_total",
			Help: "Responses requests by transport, engine and final status (or HTTP status when rejected)."}, []string{"transport", "engine", "status"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentloop_time_to_first_token_seconds",
			Help: "Time from the request's first byte to its first output token.", Buckets: latency}, []string{"transport"}),
		tpot: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentloop_time_per_output_token_seconds",
			Help: "Mean inter-token latency of each response.", Buckets: []float64{.0001, .00025, .0005, .001, .002, .005, .01, .02, .05, .1}}, []string{"transport"}),
		e2e: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentloop_e2e_request_latency_seconds",
			Help: "Time from the request's first byte to its terminal event.", Buckets: latency}, []string{"transport"}),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentloop_stage_duration_seconds",
			Help: "Duration of each pipeline stage (measured and modelled).", Buckets: []float64{.00001, .00005, .0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5}}, []string{"stage", "kind", "transport"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentloop_cache_lookups_total",
			Help: "Lookups in the connection, config, token and prefix caches, by result."}, []string{"cache", "result"}),
		itl: newGapHistogram("agentloop_inter_token_latency_seconds",
			"Time between consecutive output tokens as the engine wrote them; a delta carrying k tokens adds k-1 gaps of zero.",
			[]float64{.0005, .001, .0015, .002, .003, .005, .01, .025, .05, .1, .25, 1}, "transport"),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "agentloop_requests_running",
			Help: "Responses generating now, from scheduler submission to the terminal event."}, []string{"transport"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "agentloop_stack_stage_waiting",
			Help: "Requests waiting in a modelled API stack stage now, by stage."}, []string{"stage"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentloop_active_websocket_connections",
			Help: "Open WebSocket-mode connections."}),
		prefixQuery: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentloop_prefix_cache_queries_total",
			Help: "Prompt tokens looked up in the prefix cache."}),
		prefixHit: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentloop_prefix_cache_hits_total",
			Help: "Prompt tokens found in the prefix cache."}),
		busy: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentloop_budget_refusals_total",
			Help: "Requests refused with 503 because the in-flight budget was spent."}),
		stalls: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentloop_write_stall_aborts_total",
			Help: "Connections aborted because a write stalled past the limit."}),
		stateDrops: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentloop_connection_state_drops_total",
			Help: "Idle sessions whose connection state the state budget (--state-bytes) dropped; their next continuation gets previous_response_not_found."}),
		outTokens: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentloop_generation_tokens_total",
			Help: "Output tokens streamed."}),
	}
	var reg prometheus.Registerer = m.reg
	if replica != "" { // every series says which replica it came from
		reg = prometheus.WrapRegistererWith(prometheus.Labels{"replica": replica}, reg)
	}
	m.registerer = reg
	reg.MustRegister(m.requests, m.ttft, m.tpot, m.e2e, m.stages, m.cache, m.itl, m.running, m.waiting, m.connections, m.stalls, m.busy,
		m.outTokens, m.prefixQuery, m.prefixHit, m.stateDrops,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// watchSlots exports the scheduler's batch slots per profile, read at
// scrape time: running, held by a paused response, and queued. Every
// built-in profile is always listed, so a leaked slot shows as a gauge that
// never returns to zero.
func (m *Metrics) watchSlots(s *inference.Scheduler) {
	m.registerer.MustRegister(&slotsCollector{sched: s, desc: prometheus.NewDesc("agentloop_batch_slots",
		"Batch slots of each model profile's simulated accelerator, by state: running (prefilling or decoding), held (a paused response keeps it), queued (jobs waiting for a slot).",
		[]string{"profile", "state"}, nil)})
}

type slotsCollector struct {
	sched *inference.Scheduler
	desc  *prometheus.Desc
}

func (c *slotsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *slotsCollector) Collect(ch chan<- prometheus.Metric) {
	byName := map[string]inference.Slots{}
	for _, p := range inference.Profiles() {
		byName[p.Name] = inference.Slots{Profile: p.Name}
	}
	for _, sl := range c.sched.SlotsByProfile() {
		sum := byName[sl.Profile] // equal names (a copy made Unmodelled) add up
		sum.Profile, sum.Running, sum.Held, sum.Queued = sl.Profile, sum.Running+sl.Running, sum.Held+sl.Held, sum.Queued+sl.Queued
		byName[sl.Profile] = sum
	}
	for name, sl := range byName {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(sl.Running), name, "running")
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(sl.Held), name, "held")
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(sl.Queued), name, "queued")
	}
}

// watchStates exports the state budget's size, states and bound, read at
// scrape time.
func (m *Metrics) watchStates(b *StateBudget) {
	m.registerer.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentloop_connection_state_bytes",
			Help: "Bytes of connection state (each WebSocket lane's latest response, kept for its continuation) held idle, as the state budget counts them."},
			func() float64 { n, _ := b.Size(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentloop_connection_states",
			Help: "Connection states held idle."},
			func() float64 { _, n := b.Size(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentloop_connection_state_budget_bytes",
			Help: "The state budget (--state-bytes); 0: no bound."},
			func() float64 { return float64(b.Max()) }))
}

// Registry is where the metrics are registered, for their handler and
// for the metrics of the layers above the core (the drills').
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

func (m *Metrics) Rejected(transport, engine string, status int) {
	m.requests.WithLabelValues(transport, engine, strconv.Itoa(status)).Inc()
}

func (m *Metrics) ConnOpened()   { m.connections.Inc() }
func (m *Metrics) ConnClosed()   { m.connections.Dec() }
func (m *Metrics) StallAborted() { m.stalls.Inc() }

func (m *Metrics) budgetRefused() { m.busy.Inc() }

// cacheLookups counts many lookups of one cache at once.
func (m *Metrics) cacheLookups(cache string, hits, misses int) {
	if hits > 0 {
		m.cache.WithLabelValues(cache, "hit").Add(float64(hits))
	}
	if misses > 0 {
		m.cache.WithLabelValues(cache, "miss").Add(float64(misses))
	}
}

func (m *Metrics) prefixLookup(queried, matched int) {
	m.cacheLookup("prefix", matched > 0)
	m.prefixQuery.Add(float64(queried))
	m.prefixHit.Add(float64(matched))
}

func (m *Metrics) generating(transport string) prometheus.Gauge {
	return m.running.WithLabelValues(transport)
}

func (m *Metrics) cacheLookup(cache string, hit bool) {
	result := "miss"
	if hit {
		result = "hit"
	}
	m.cache.WithLabelValues(cache, result).Inc()
}

func (m *Metrics) observe(t *Trace, tm inference.GenerationTimings, tokens int, status string) {
	m.requests.WithLabelValues(t.Transport, t.Engine, status).Inc()
	m.outTokens.Add(float64(tokens))
	if !tm.FirstToken.IsZero() && tokens > 0 {
		m.ttft.WithLabelValues(t.Transport).Observe(tm.FirstToken.Sub(t.start).Seconds())
	}
	if tokens > 1 && !tm.LastToken.IsZero() {
		m.tpot.WithLabelValues(t.Transport).Observe(tm.LastToken.Sub(tm.FirstToken).Seconds() / float64(tokens-1))
	}
	m.e2e.WithLabelValues(t.Transport).Observe(time.Since(t.start).Seconds())
	for _, s := range t.Spans {
		// A shared sum must never go down: no span counts below zero.
		m.stages.WithLabelValues(s.Name, s.Kind, t.Transport).Observe(float64(max(s.DurationNS, 0)) / 1e9)
	}
}

// gapHistogram is a Prometheus histogram that takes whole responses' gaps at
// once (see tokenGaps), one series per label value.
type gapHistogram struct {
	desc   *prometheus.Desc
	bounds []float64
	mu     sync.Mutex
	series map[string]*gapSeries
}

type gapSeries struct {
	counts []uint64
	sum    float64
	n      uint64
}

func newGapHistogram(name, help string, bounds []float64, label string) *gapHistogram {
	if len(bounds) != gapBuckets {
		panic("server: the inter-token histogram needs gapBuckets bounds")
	}
	return &gapHistogram{desc: prometheus.NewDesc(name, help, []string{label}, nil), bounds: bounds, series: map[string]*gapSeries{}}
}

func (h *gapHistogram) merge(label string, g *tokenGaps) {
	if g.n == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.series[label]
	if s == nil {
		s = &gapSeries{counts: make([]uint64, len(g.counts))}
		h.series[label] = s
	}
	for i, c := range g.counts {
		s.counts[i] += uint64(c)
	}
	s.sum += g.sum
	s.n += g.n
}

func (h *gapHistogram) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

func (h *gapHistogram) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for label, s := range h.series {
		buckets := make(map[float64]uint64, len(h.bounds))
		var cum uint64
		for i, b := range h.bounds {
			cum += s.counts[i]
			buckets[b] = cum
		}
		ch <- prometheus.MustNewConstHistogram(h.desc, s.n, s.sum, buckets, label)
	}
}
