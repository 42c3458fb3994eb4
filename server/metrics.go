package server

import (
	"net/http"
	"strconv"
	"time"

	"agentloop/inference"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the engine's Prometheus metrics, named after vLLM's where they
// fit. Each Metrics has its own registry, so tests can build many engines.
type Metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	ttft        *prometheus.HistogramVec
	tpot        *prometheus.HistogramVec
	e2e         *prometheus.HistogramVec
	stages      *prometheus.HistogramVec
	cache       *prometheus.CounterVec
	connections prometheus.Gauge
	stalls      prometheus.Counter
	outTokens   prometheus.Counter
}

// NewMetrics registers the engine's metrics in a fresh registry.
func NewMetrics() *Metrics {
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
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentloop_active_websocket_connections",
			Help: "Open WebSocket-mode connections."}),
		stalls: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentloop_write_stall_aborts_total",
			Help: "Connections aborted because a write stalled past the limit."}),
		outTokens: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentloop_generation_tokens_total",
			Help: "Output tokens streamed."}),
	}
	m.reg.MustRegister(m.requests, m.ttft, m.tpot, m.e2e, m.stages, m.cache, m.connections, m.stalls, m.outTokens,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics.
func (m *Metrics) Handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

// Registry exposes the registry for extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

func (m *Metrics) rejected(transport string, status int) {
	m.requests.WithLabelValues(transport, "", strconv.Itoa(status)).Inc()
}

func (m *Metrics) connOpened() { m.connections.Inc() }
func (m *Metrics) connClosed() { m.connections.Dec() }
func (m *Metrics) stallAborted() { m.stalls.Inc() }

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
		m.stages.WithLabelValues(s.Name, s.Kind, t.Transport).Observe(float64(s.DurationNS) / 1e9)
	}
}
