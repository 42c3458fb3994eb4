package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"

	"agentloop/app"
)

// ephemeralStore points serve --ephemeral at a SQLite file in a new
// temporary directory, and listens on 127.0.0.1:0 unless --addr (or
// AGENTLOOP_ADDR) names an address. It returns the directory, which the
// caller removes once the store is closed.
func ephemeralStore(fs *flag.FlagSet, cfg *app.Config) (string, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["db"] {
		return "", errors.New("--ephemeral makes its own store in a temporary directory: leave out --db (and AGENTLOOP_DB)")
	}
	if !set["addr"] {
		cfg.Addr = "127.0.0.1:0"
	}
	dir, err := os.MkdirTemp("", "agentloop-ephemeral-")
	if err != nil {
		return "", err
	}
	cfg.DB = filepath.Join(dir, "agentloop.db")
	return dir, nil
}

type stdinKey struct{}

// withStdin hands the process's standard input to serve --ephemeral; main
// sets it, and a serve run in-process without it never watches one.
func withStdin(ctx context.Context, stdin *os.File) context.Context {
	return context.WithValue(ctx, stdinKey{}, stdin)
}

// untilStdinEnds returns a context cancelled when standard input ends, if
// it is a pipe or a socket (a parent holding its write end: a shell pipe,
// Python's subprocess, Node's spawn, Playwright's webServer), so the server
// exits with the process that started it even if that one is killed. Any
// other standard input (a terminal, /dev/null under Go's exec.Cmd without
// Stdin, a CI runner's) is not watched: its end says nothing.
func untilStdinEnds(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stdin, _ := ctx.Value(stdinKey{}).(*os.File)
	if stdin == nil {
		return ctx, cancel
	}
	st, err := stdin.Stat()
	if err != nil || st.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return ctx, cancel
	}
	go func() {
		io.Copy(io.Discard, stdin) // what a parent writes is not read as input
		cancel()
	}()
	return ctx, cancel
}
