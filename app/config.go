package app

import (
	"net"
	"os"
	"time"

	"agentloop/api"
	"agentloop/rollout"
	"agentloop/server/core"
)

// Config is every setting of a server process. cmd/agentloop fills it from
// flags and environment variables.
type Config struct {
	// Config is the engine's settings, declared once in server with their
	// defaults. New sets Name per engine, and TokenCache and ModelCache
	// switch /v1's request-level caches (/baseline/v1 never has them).
	core.Config

	Addr         string
	DB           string // a SQLite file, or a postgres:// URL (OpenStore)
	APIKey       string
	AllowedHosts []string

	// With APIKey: a browser login lasts SessionTTL from login (fixed, not
	// sliding), and wrong keys are throttled per client address to
	// LoginRate a second after a burst of LoginBurst.
	SessionTTL time.Duration
	LoginRate  float64
	LoginBurst int

	TraceRing int
	// ReplicaID names this process among replicas sharing one store; it
	// labels traces and metrics. Empty: the host name and the port.
	ReplicaID string
	Grace     time.Duration
	// Retention is how long stored responses, runs and sessions are kept;
	// 0 keeps everything.
	Retention time.Duration
	// SealKey, when set, is the key that seals reasoning blobs (--seal-key,
	// seal.ParseKey's forms); empty: the store's, made once (sealkey.go).
	SealKey string

	// Observer, when set, also sees every request the engines finish or
	// reject (core.Observer); tests use it.
	Observer core.Observer

	// Drills are armed at start (serve --drill).
	Drills []api.DrillSpec

	// BodyTimeout drops a request body that stops arriving; 0 = never.
	BodyTimeout time.Duration

	// Per client address limits; 0 = off.
	RateLimit float64 // requests per second
	RateBurst int
	ConnLimit int // concurrent connections

	// HomePreset, when set, replaces the home page's ready-made race;
	// apptest.ShortRace sets a short one.
	HomePreset *rollout.Config
}

// DefaultDB is the store serve, race and sweep open when given none: a
// SQLite file in the working directory, so that the playground's /runs and
// /sweep pages read what the CLI stored.
const DefaultDB = "./agentloop.db"

// Defaults returns the documented defaults: the engine's from
// core.Defaults, and the process's own.
func Defaults() Config {
	return Config{
		Config: core.Defaults(""),
		Addr:   "127.0.0.1:8080", DB: DefaultDB,
		SessionTTL: 7 * 24 * time.Hour, LoginRate: 2, LoginBurst: 5,
		TraceRing: 10000, Grace: 10 * time.Second, Retention: 7 * 24 * time.Hour, BodyTimeout: 30 * time.Second, RateBurst: 20,
	}
}

// defaultReplicaID is the host name and the port of addr.
func defaultReplicaID(addr string) string {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		port = addr
	}
	return host + ":" + port
}
