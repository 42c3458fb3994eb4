// Command agentloop runs the agentloop server (serve, the default), races
// agent rollouts over HTTP and WebSocket (race), and benchmarks the engine
// (bench).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = withStdin(ctx, os.Stdin) // serve --ephemeral exits when a piped stdin ends
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, errHelp) {
			fmt.Fprintln(os.Stderr, "agentloop:", err)
		}
		os.Exit(exitCode(err))
	}
}

// run is the whole program: flags and environment are read here and only
// here.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return runServe(ctx, args, getenv, stdout, stderr)
	case "race":
		return runRace(ctx, args, getenv, stdout, stderr)
	case "bench":
		return runBench(ctx, args, getenv, stdout, stderr)
	case "workload":
		return runWorkload(ctx, args, getenv, stdout, stderr)
	case "check":
		return runCheck(ctx, args, getenv, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage())
		return nil
	}
	fmt.Fprint(stderr, usage())
	return fmt.Errorf("unknown command %q", cmd)
}

func usage() string {
	return `agentloop: a Responses API engine and playground that races agent loops over HTTP and WebSocket.

Usage:
  agentloop [serve] [flags]        run the server (default)
  agentloop race [flags]           race a scripted rollout over several transports
  agentloop bench NAME [flags]     benchmark the engine; NAME is one of
                                   ` + benchmarkNames() + `
  agentloop workload import FILE   turn a recorded session into a workload (--from: codex,
                                   asciinema-mini-swe-agent, swe-agent, atif, claude-code)
  agentloop workload corpus        the shape of the corpus of recorded sessions
  agentloop check [flags] -- CMD   grade a Responses API client: a report card of drills
  agentloop <command> --help       flags of a command

Every flag can also be set by an environment variable: AGENTLOOP_ plus the
flag's name in upper case with _ for -, e.g. AGENTLOOP_ADDR.
`
}
