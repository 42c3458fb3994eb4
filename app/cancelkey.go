package app

import (
	"crypto/rand"
	"errors"
	"io/fs"
	"log/slog"
	"os"

	"agentloop/store/postgres"
)

// cancelKeyBytes is the size of the key that signs runs' cancel tokens.
const cancelKeyBytes = 32

// cancelKey is the key that signs runs' cancel tokens (web.Deps.CancelSecret),
// so that whoever started a run can still delete it after a restart. A
// SQLite store keeps it beside its file (DB + ".cancel-key", mode 0600);
// it is drawn on first use. PostgreSQL replicas each draw their own: a
// token then works on the replica that started the run, which is where a
// run is cancelled, and --api-key covers the rest. nil (the playground
// draws a key for the process) when the file cannot be kept, and with
// --api-key, where every client holds the key and no token is given.
func cancelKey(cfg Config, log *slog.Logger) []byte {
	if cfg.APIKey != "" || postgres.IsURL(cfg.DB) {
		return nil
	}
	path := cfg.DB + ".cancel-key"
	if b, err := os.ReadFile(path); err == nil && len(b) == cancelKeyBytes {
		return b
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Warn("cancel tokens last as long as the process: the key file cannot be read", "path", path, "err", err)
		return nil
	}
	key := make([]byte, cancelKeyBytes)
	_, _ = rand.Read(key)
	if err := os.WriteFile(path, key, 0o600); err != nil {
		log.Warn("cancel tokens last as long as the process: the key file cannot be written", "path", path, "err", err)
		return nil
	}
	return key
}
