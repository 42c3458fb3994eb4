package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"agentloop/app"
)

// ephemeralPrefix starts the name of each directory serve --ephemeral makes
// under $TMPDIR.
const ephemeralPrefix = "agentloop-ephemeral-"

// ephemeralStore points serve --ephemeral at a SQLite file in a new
// temporary directory, and listens on 127.0.0.1:0 unless --addr (or
// AGENTLOOP_ADDR) names an address. The returned release, called once the
// store is closed, removes the directory. The process holds a lock on the
// directory while it lives, so that a later start removes the directory of
// one that was killed (SIGKILL cannot be handled) and never a live one's.
func ephemeralStore(fs *flag.FlagSet, cfg *app.Config) (release func(), err error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["db"] {
		return nil, errors.New("--ephemeral makes its own store in a temporary directory: leave out --db (and AGENTLOOP_DB)")
	}
	if !set["addr"] {
		cfg.Addr = "127.0.0.1:0"
	}
	sweepEphemeral(os.TempDir())
	dir, err := os.MkdirTemp("", ephemeralPrefix)
	if err != nil {
		return nil, err
	}
	lock, err := lockEphemeral(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cfg.DB = filepath.Join(dir, "agentloop.db")
	return func() {
		os.RemoveAll(dir)
		lock.Close()
	}, nil
}

// lockEphemeral locks a file under dir, named "lock" only once it is locked,
// so a sweep never finds it unlocked while its owner lives.
func lockEphemeral(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, "lock-")
	if err != nil {
		return nil, err
	}
	if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, "lock"))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return f, nil
}

// sweepEphemeral removes the directories under tmp of --ephemeral servers
// that are gone: those whose lock nobody holds. A directory without a lock
// (another program's, or one being made) is left alone.
func sweepEphemeral(tmp string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, ephemeralPrefix+"*"))
	for _, dir := range dirs {
		f, err := os.Open(filepath.Join(dir, "lock"))
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(dir)
		}
		f.Close()
	}
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
