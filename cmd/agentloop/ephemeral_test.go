package main

import (
	"bufio"
	"cmp"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentloop/internal/wait"
)

// fixtureProcess is `agentloop serve --ephemeral` started as a test suite
// starts it: the built binary, its temporary directory under tmp.
type fixtureProcess struct {
	cmd    *exec.Cmd
	url    string
	tmp    string
	exited chan error // gets cmd.Wait's answer once the process has exited
}

// startFixture starts the binary with serve --ephemeral and args, TMPDIR
// set to tmp (a directory of the test's own when ""), and reads the first
// line of its standard output. stdin is the child's standard input: nil
// gives it /dev/null, as exec.Cmd does.
func startFixture(t *testing.T, tmp string, stdin io.Reader, args ...string) *fixtureProcess {
	t.Helper()
	p := &fixtureProcess{tmp: cmp.Or(tmp, t.TempDir()), exited: make(chan error, 1)}
	p.cmd = exec.Command(binary(t), append([]string{"serve", "--ephemeral"}, args...)...)
	p.cmd.Env = append(os.Environ(), "TMPDIR="+p.tmp)
	p.cmd.Stdin = stdin
	var stderr syncBuffer
	p.cmd.Stderr = &stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		first <- line
		io.Copy(io.Discard, out)
		p.exited <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	select {
	case line := <-first:
		p.url = strings.TrimSuffix(line, "\n")
		if !strings.HasSuffix(line, "\n") {
			t.Fatalf("no first line on stdout (got %q); stderr:\n%s", line, stderr.String())
		}
	case <-time.After(wait.Deadline):
		t.Fatalf("no first line on stdout; stderr:\n%s", stderr.String())
	}
	return p
}

// waitExit waits for the process to exit and returns its error.
func (p *fixtureProcess) waitExit(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err // for the cleanup
		return err
	case <-time.After(wait.Deadline):
		t.Fatal("the fixture did not exit")
		return nil
	}
}

// running reports whether the process has not exited.
func (p *fixtureProcess) running() bool {
	select {
	case err := <-p.exited:
		p.exited <- err
		return false
	default:
		return true
	}
}

// storeDirs lists the fixtures' directories under tmp.
func storeDirs(t *testing.T, tmp string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(tmp, "agentloop-ephemeral-*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// stores lists the files under the fixture's temporary directory.
func (p *fixtureProcess) stores(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(p.tmp, func(path string, d os.DirEntry, err error) error {
		if err == nil && path != p.tmp {
			files = append(files, strings.TrimPrefix(path, p.tmp+"/"))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// mustServe checks the first line is the URL alone, that /readyz under it
// answers 200 and that a create completes.
func (p *fixtureProcess) mustServe(t *testing.T) {
	t.Helper()
	u, err := url.Parse(p.url)
	if err != nil || u.Scheme != "http" || u.Path != "" || u.Port() == "" || u.Port() == "0" {
		t.Fatalf("first line %q: want the URL alone, http://host:port", p.url)
	}
	resp, err := http.Get(p.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "ready\n" {
		t.Fatalf("/readyz: %d %q", resp.StatusCode, b)
	}
	resp, err = http.Post(p.url+"/v1/responses", "application/json", strings.NewReader(`{"model":"instant","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"status":"completed"`) {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
}

// The URL alone is the first line of stdout, the store lives in a
// temporary directory, a signal ends the process cleanly and the store is
// gone after it. Standard input is /dev/null here (exec.Cmd without Stdin,
// as under go test or CI): its end must not stop the server, so the server
// is still running after it has answered.
func TestEphemeralServesUntilASignalAndRemovesItsStore(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startFixture(t, "", nil)
			p.mustServe(t)
			if !p.running() {
				t.Fatal("the fixture exited with /dev/null as standard input")
			}
			files := p.stores(t)
			if len(files) == 0 || !strings.HasPrefix(files[0], "agentloop-ephemeral-") || !strings.Contains(strings.Join(files, " "), "/agentloop.db") {
				t.Fatalf("the store is not in a temporary directory: %q", files)
			}
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if err := p.waitExit(t); err != nil {
				t.Fatalf("after %v: %v, want exit status 0", sig, err)
			}
			if files := p.stores(t); len(files) != 0 {
				t.Fatalf("after exit the temporary directory still holds %q", files)
			}
		})
	}
}

// A piped standard input (a parent holding its write end) stops the
// server when it ends, so the fixture dies with a test runner that was
// killed; the store is removed. Node's spawn gives a socket, not a pipe:
// it counts as one.
func TestEphemeralExitsWhenAPipedStdinEnds(t *testing.T) {
	for _, kind := range []string{"pipe", "socket"} {
		t.Run(kind, func(t *testing.T) {
			var r, w *os.File
			if kind == "pipe" {
				var err error
				if r, w, err = os.Pipe(); err != nil {
					t.Fatal(err)
				}
			} else {
				fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
				r, w = os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "parent")
			}
			defer r.Close()
			p := startFixture(t, "", r)
			p.mustServe(t)
			if _, err := io.WriteString(w, "anything a parent writes is ignored\n"); err != nil {
				t.Fatal(err)
			}
			p.mustServe(t)
			if !p.running() {
				t.Fatal("the fixture exited while its standard input was open")
			}
			w.Close()
			if err := p.waitExit(t); err != nil {
				t.Fatalf("after the end of stdin: %v, want exit status 0", err)
			}
			if files := p.stores(t); len(files) != 0 {
				t.Fatalf("after exit the temporary directory still holds %q", files)
			}
		})
	}
}

// --addr names the port (Playwright's webServer waits on a known one).
func TestEphemeralListensOnTheAddrGiven(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := startFixture(t, "", nil, "--addr", addr)
	if p.url != "http://"+addr {
		t.Fatalf("first line %q, want http://%s", p.url, addr)
	}
	p.mustServe(t)
}

// --db names a store the fixture would not remove: refused.
func TestEphemeralRefusesADB(t *testing.T) {
	var stdout, stderr syncBuffer
	for _, c := range []struct {
		args []string
		env  map[string]string
	}{
		{args: []string{"serve", "--ephemeral", "--db", filepath.Join(t.TempDir(), "kept.db")}},
		{args: []string{"serve", "--ephemeral"}, env: map[string]string{"AGENTLOOP_DB": filepath.Join(t.TempDir(), "kept.db")}},
	} {
		err := run(context.Background(), c.args, func(k string) string { return c.env[k] }, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "leave out --db") {
			t.Errorf("%v %v: %v, want a refusal naming --db", c.args, c.env, err)
		}
	}
	if stdout.String() != "" {
		t.Errorf("stdout %q, want nothing", stdout.String())
	}
}

// A SIGKILL cannot be handled, so it leaves the store behind; the next
// --ephemeral start under the same TMPDIR removes it, and never the store
// of a fixture that still runs.
func TestEphemeralSweepsTheStoreOfAKilledFixture(t *testing.T) {
	tmp := t.TempDir()
	killed := startFixture(t, tmp, nil)
	killed.mustServe(t)
	if err := killed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.waitExit(t)
	left := storeDirs(t, tmp)
	if len(left) != 1 {
		t.Fatalf("after SIGKILL: %q, want the killed fixture's directory", left)
	}
	live := startFixture(t, tmp, nil)
	live.mustServe(t)
	next := startFixture(t, tmp, nil)
	next.mustServe(t)
	dirs := storeDirs(t, tmp)
	if len(dirs) != 2 || slices.Contains(dirs, left[0]) {
		t.Fatalf("directories %q: want the two running fixtures' only, not the killed one's %s", dirs, left[0])
	}
	live.mustServe(t) // its store is still there
}
