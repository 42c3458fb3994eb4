// Package pgtest starts a throwaway PostgreSQL cluster for tests: initdb
// and pg_ctl from Debian's packages (/usr/lib/postgresql/N/bin, or on
// PATH), in a temporary directory, listening only on a unix socket in that
// directory. It never touches a system cluster. As root it runs them with
// runuser -u postgres on a directory that user owns, since initdb and
// postgres refuse to run as root.
//
// The cluster starts once per test binary, on the first Database call, and
// each test gets a database of its own (CREATE DATABASE, dropped at its
// cleanup), so tests stay isolated and fast. A package that uses it calls
// Main from TestMain, which stops the cluster when the tests end; Main's
// Prepare option prepares a template once (a schema, say), which every
// test's database then starts as a copy of.
//
// Without PostgreSQL installed the tests that need it skip, saying why;
// with the environment variable CI set they fail instead (.ci/run installs
// it).
package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// cluster is the one throwaway cluster of this test binary.
type cluster struct {
	bin      string // the directory holding initdb and pg_ctl
	template string // the database each test's is copied from
	dir      string // the temporary directory: data/, the socket, the log
	asUser   string // "postgres" when running as root, else ""
	skipped  string // why there is no cluster: PostgreSQL is not installed
	err      error  // why it could not start
}

var (
	mainCalled atomic.Bool
	prepare    func(ctx context.Context, dsn string) error
	startOnce  sync.Once
	the        cluster
	dbSeq      atomic.Int64
)

// Option tunes Main.
type Option func()

// Prepare runs f once, on the first Database call, on a template database:
// every test's database starts as a copy of it. A package whose tests all
// open the same schema migrates once here instead of once per test.
func Prepare(f func(ctx context.Context, dsn string) error) Option {
	return func() { prepare = f }
}

// Main runs the tests and then stops the cluster, if one was started;
// call it from TestMain: func TestMain(m *testing.M) { pgtest.Main(m) }.
func Main(m *testing.M, opts ...Option) {
	for _, o := range opts {
		o()
	}
	mainCalled.Store(true)
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Database creates an empty database for t and returns its URL; it is
// dropped at t's cleanup, whatever connections remain. The first call
// starts the cluster.
func Database(t testing.TB) string {
	t.Helper()
	return create(t, "")
}

// Blank is Database without Prepare's template: an empty database, as a
// new server has.
func Blank(t testing.TB) string {
	t.Helper()
	return create(t, "template1")
}

func create(t testing.TB, template string) string {
	t.Helper()
	c := start(t)
	if template == "" {
		template = c.template
	}
	name := fmt.Sprintf("test_%d", dbSeq.Add(1))
	admin(t, c, func(conn *pgx.Conn) error {
		_, err := conn.Exec(context.Background(), "CREATE DATABASE "+name+" TEMPLATE "+template)
		return err
	})
	t.Cleanup(func() {
		admin(t, c, func(conn *pgx.Conn) error {
			_, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			return err
		})
	})
	return c.url(name)
}

// Cut makes the database at dsn unreachable for the rest of the test: it
// refuses new connections and its open ones are terminated, as when the
// server goes away.
func Cut(t testing.TB, dsn string) {
	t.Helper()
	c := start(t)
	name := databaseName(t, dsn)
	admin(t, c, func(conn *pgx.Conn) error {
		ctx := context.Background()
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+name+" WITH ALLOW_CONNECTIONS false"); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name)
		return err
	})
}

// Unreachable returns the URL of a database on a loopback port where no
// server listens. It needs no cluster.
func Unreachable(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "postgres://postgres@" + addr + "/agentloop?sslmode=disable&connect_timeout=5"
}

func databaseName(t testing.TB, dsn string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Database
}

// url is the connection URL of database name, over the cluster's socket.
func (c *cluster) url(name string) string {
	return "postgres://postgres@/" + name + "?host=" + url.QueryEscape(c.dir) + "&sslmode=disable"
}

// admin runs f on a connection to the maintenance database.
func admin(t testing.TB, c *cluster, f func(*pgx.Conn) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		t.Fatalf("pgtest: connect to the test cluster: %v", err)
	}
	defer conn.Close(context.Background())
	if err := f(conn); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// start starts the cluster once, or skips or fails t saying why it cannot.
func start(t testing.TB) *cluster {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatal("pgtest: call pgtest.Main from the package's TestMain, so the cluster is stopped when the tests end")
	}
	startOnce.Do(func() { the = boot() })
	switch {
	case the.skipped != "" && os.Getenv("CI") != "":
		t.Fatalf("pgtest: %s; CI needs it (.ci/run installs Debian's postgresql)", the.skipped)
	case the.skipped != "":
		t.Skipf("pgtest: %s; install Debian's postgresql to run these tests", the.skipped)
	case the.err != nil:
		t.Fatalf("pgtest: %v", the.err)
	}
	return &the
}

// boot finds the binaries, initialises a cluster in a temporary directory
// and starts it.
func boot() cluster {
	var c cluster
	c.bin = findBin()
	if c.bin == "" {
		c.skipped = "PostgreSQL is not installed (no initdb and pg_ctl in /usr/lib/postgresql/*/bin or on PATH)"
		return c
	}
	dir, err := os.MkdirTemp("", "agentloop-pg-")
	if err != nil {
		c.err = err
		return c
	}
	c.dir = dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			c.err = fmt.Errorf("running as root needs the user postgres (Debian's postgresql package creates it): %w", err)
			return c
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			c.err = err
			return c
		}
		c.asUser = "postgres"
	}
	data := filepath.Join(dir, "data")
	if err := c.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"); err != nil {
		c.err = err
		return c
	}
	// Only the socket in dir, no TCP: nothing to collide with. Durability
	// is off: the cluster is thrown away.
	opts := "-k " + dir + " -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=32MB"
	if err := c.run("pg_ctl", "start", "-D", data, "-l", filepath.Join(dir, "postgres.log"), "-w", "-t", "60", "-o", opts); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
		c.err = fmt.Errorf("%w\n%s", err, log)
		return c
	}
	c.watch()
	c.template = "template1"
	if prepare != nil {
		c.err = c.prepareTemplate()
	}
	return c
}

// prepareTemplate creates the template database and runs Prepare's
// function on it.
func (c *cluster) prepareTemplate() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		return fmt.Errorf("connect to the test cluster: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE prepared"); err != nil {
		return err
	}
	if err := prepare(ctx, c.url("prepared")); err != nil {
		return fmt.Errorf("prepare the template database: %w", err)
	}
	// No connection may remain on a template while it is copied.
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'prepared'"); err != nil {
		return err
	}
	c.template = "prepared"
	return nil
}

// watch starts a watchdog, in a process group of its own, that stops the
// cluster and removes its directory once this test binary is gone without
// calling stop (a panic, a test timeout, a kill): a crashed test leaves no
// cluster behind. After a clean stop it finds nothing to do.
func (c *cluster) watch() {
	stop := fmt.Sprintf("%q stop -D %q -m immediate", filepath.Join(c.bin, "pg_ctl"), filepath.Join(c.dir, "data"))
	if c.asUser != "" {
		stop = "runuser -u " + c.asUser + " -- " + stop
	}
	script := fmt.Sprintf("while kill -0 %d 2>/dev/null; do sleep 1; done; %s; rm -rf %q", os.Getpid(), stop, c.dir)
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err == nil {
		go cmd.Wait()
	}
}

// stop stops the cluster and removes its directory.
func stop() error {
	if the.dir == "" {
		return nil
	}
	var err error
	if the.err == nil && the.skipped == "" {
		err = the.run("pg_ctl", "stop", "-D", filepath.Join(the.dir, "data"), "-m", "fast", "-w", "-t", "60")
	}
	if rerr := os.RemoveAll(the.dir); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// run runs one of the cluster's binaries, as postgres when we are root.
func (c *cluster) run(name string, args ...string) error {
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.asUser != "" {
		cmd = exec.Command("runuser", append([]string{"-u", c.asUser, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, out.Bytes())
	}
	return nil
}

// findBin returns the directory of the newest installed initdb and pg_ctl:
// Debian keeps them in /usr/lib/postgresql/N/bin, off PATH.
func findBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if executable(filepath.Join(d, "initdb")) && executable(filepath.Join(d, "pg_ctl")) {
			return d
		}
	}
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		return ""
	}
	if resolved, err := filepath.EvalSymlinks(initdb); err == nil {
		initdb = resolved
	}
	if d := filepath.Dir(initdb); executable(filepath.Join(d, "pg_ctl")) {
		return d
	}
	return ""
}

func version(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}
