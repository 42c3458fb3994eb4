package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"agentloop/rollout"
	"agentloop/web"
)

// recordReference runs presenter mode's classroom race (web.RecordedRace) in
// process and writes it to path as the recording the binary carries
// (web.RaceRecording; docs/race-reference.json). The race is the page's
// own, so no flag that shapes a race goes with --reference.
func recordReference(ctx context.Context, fs *flag.FlagSet, path, dbPath string, stderr io.Writer) error {
	var shaped []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "reference" && f.Name != "db" {
			shaped = append(shaped, "--"+f.Name)
		}
	})
	if len(shaped) > 0 {
		return fmt.Errorf("--reference runs presenter mode's classroom race; leave out %v", shaped)
	}
	cfg := web.RecordedRace()
	if err := rollout.Normalize(&cfg); err != nil {
		return fmt.Errorf("the classroom race: %s", err.Message)
	}
	rec, err := raceInProcess(ctx, dbPath, cfg, stderr)
	if err != nil {
		return err
	}
	if rec.Status != rollout.StatusPassed {
		return &exitError{code: 1, err: fmt.Errorf("race %s %s: not kept as the reference", rec.ID, rec.Status)}
	}
	b, err := json.MarshalIndent(web.NewRaceRecording(rec), "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s: run %s; %s\n", path, rec.ID, rec.Summary.Headline)
	return nil
}
