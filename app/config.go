package app

import (
	"time"

	"agentloop/api"
)

// Config is every setting of a server process. cmd/agentloop fills it from
// flags and environment variables.
type Config struct {
	Addr         string
	DB           string
	APIKey       string
	AllowedHosts []string

	MaxBody      int64
	WSReadLimit  int64
	WSQueue      int
	WSQueueBytes int64
	WSLifetime   time.Duration
	WriteStall   time.Duration
	TraceRing    int
	Grace        time.Duration

	// TokenCache and ModelCache switch /v1's request-level caches.
	TokenCache bool
	ModelCache bool
	// Unmodelled turns all modelled costs off (benchmarks).
	Unmodelled bool
	// Stack is the modelled API stack of requests that choose none.
	Stack api.Stack

	// Per client address limits; 0 = off.
	RateLimit float64 // requests per second
	RateBurst int
	ConnLimit int // concurrent connections
}

// Defaults returns the documented defaults.
func Defaults() Config {
	return Config{
		Addr: "127.0.0.1:8080", DB: "./agentloop.db",
		MaxBody: 32 << 20, WSReadLimit: 16 << 20, WSQueue: 64, WSQueueBytes: 64 << 20,
		WSLifetime: 60 * time.Minute, WriteStall: 30 * time.Second, TraceRing: 10000, Grace: 10 * time.Second,
		TokenCache: true, ModelCache: true, RateBurst: 20, Stack: api.StackLean,
	}
}
