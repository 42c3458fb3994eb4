package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"agentloop/app"
	"agentloop/check"
	"agentloop/store"
)

func runCheck(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop check", flag.ContinueOnError)
	checks := fs.String("checks", "all", "checks to run, comma-separated: "+strings.Join(check.IDs(), ", "))
	asJSON := fs.Bool("json", false, "print the report as JSON")
	junit := fs.String("junit", "", "also write the report as JUnit XML to this file, one test case per check")
	serverURL := fs.String("server", "", "grade against the agentloop server at this URL instead of an engine in this process")
	apiKey := fs.String("api-key", "", "API key of --server, if it has one; the client gets it as OPENAI_API_KEY")
	timeLimit := fs.Duration("time-limit", 60*time.Second, "how long each run of the client may take before it is killed")
	var o check.Options
	fs.DurationVar(&o.FallbackDeadline, "fallback-deadline", 10*time.Second, "falls-back-when-upgrade-refused: how soon after the first refused upgrade the client must have finished over HTTP")
	fs.IntVar(&o.UpgradeStatus, "upgrade-status", 426, "falls-back-when-upgrade-refused: the status the upgrade is refused with (426, 405 or 404)")
	fs.DurationVar(&o.RetryAfter, "retry-after", 1200*time.Millisecond, "honours-retry-after: the delay the 429 asks for (retry-after-ms; Retry-After rounds it up to whole seconds)")
	fs.DurationVar(&o.IdleLimit, "idle-limit", 1500*time.Millisecond, "reconnects-at-connection-limit: how long after it opened the client's connection reaches its limit")
	clientOutput := fs.Bool("client-output", false, "show the client's standard output and error")
	dbPath := fs.String("db", app.DefaultDB, "SQLite database of the in-process engine (without --server)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: agentloop check [flags] -- COMMAND [ARGS...]

Grades a Responses API client (README "Grade your client"): for each check it arms a drill in a
scope of its own, starts COMMAND with OPENAI_BASE_URL set to the scope's base URL
(<server>/scope/<id>/v1) and OPENAI_API_KEY, with {base_url} in ARGS replaced by that URL, waits
for it to exit, and grades what the engine saw of it: pass, fail or not_exercised. Exits 1 when a
check fails.

Flags (each also AGENTLOOP_<NAME>):
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	command := fs.Args()
	if len(command) == 0 {
		fs.Usage()
		return errors.New("no client command: give it after --, e.g. agentloop check -- ./myclient --base-url {base_url}")
	}
	selected, err := check.Select(*checks)
	if err != nil {
		return fmt.Errorf("--checks: %w", err)
	}
	switch o.UpgradeStatus {
	case 426, 405, 404:
	default:
		return fmt.Errorf("--upgrade-status must be 426, 405 or 404")
	}
	cfg := check.Config{Server: *serverURL, APIKey: *apiKey, Command: command, Checks: selected, TimeLimit: *timeLimit,
		Options: o, Progress: stderr}
	if *clientOutput {
		cfg.ClientOutput = stderr
	}
	var db interface {
		SaveCheckReport(context.Context, *store.CheckReport) error
	}
	if cfg.Server == "" {
		acfg := app.Defaults()
		acfg.Addr, acfg.DB = "127.0.0.1:0", *dbPath
		a, err := app.New(ctx, acfg, nil)
		if err != nil {
			return err
		}
		defer a.Shutdown(context.Background())
		if err := a.Start(); err != nil {
			return err
		}
		cfg.Server = a.URL()
		db = a.DB
		fmt.Fprintf(stderr, "engine on %s\n", cfg.Server)
	}
	rep, err := check.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if link, err := storeReport(ctx, db, cfg, rep); err != nil {
		fmt.Fprintf(stderr, "the report was not stored: %v\n", err)
	} else {
		fmt.Fprintf(stderr, "report card: %s\n", link)
	}
	if *junit != "" {
		f, err := os.Create(*junit)
		if err != nil {
			return err
		}
		err = check.WriteJUnit(f, rep)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		check.WriteText(stdout, rep)
	}
	if !rep.OK() {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d checks failed", rep.Failed, len(rep.Results))}
	}
	return nil
}

// storeReport keeps the report: in the in-process engine's store (its
// permalink then serves once `agentloop serve` opens the same --db), or
// on --server through POST /api/checks. It returns the permalink.
func storeReport(ctx context.Context, db interface {
	SaveCheckReport(context.Context, *store.CheckReport) error
}, cfg check.Config, rep *check.Report) (string, error) {
	if db != nil {
		rec, err := check.Record(rep)
		if err != nil {
			return "", err
		}
		if err := db.SaveCheckReport(ctx, rec); err != nil {
			return "", err
		}
		return "/check/" + rec.ID + " (serve --db with this database to open it)", nil
	}
	var info struct {
		ID  string `json:"id"`
		URL string `json:"url"`
	}
	if err := cfg.Call(ctx, http.MethodPost, "/api/checks", rep, &info); err != nil {
		return "", err
	}
	rep.ID = info.ID
	return cfg.Server + info.URL, nil
}
