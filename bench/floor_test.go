package bench_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentloop/bench"
)

// The floor's readers run in another process: this test binary, re-run as
// TestFloorReaders with the address in its environment.
func TestFloorReaders(t *testing.T) {
	addr := os.Getenv("AGENTLOOP_FLOOR_ADDR")
	if addr == "" {
		t.Skip("the reading side of TestFloorWritesEveryFrame")
	}
	conns, _ := strconv.Atoi(os.Getenv("AGENTLOOP_FLOOR_CONNS"))
	if err := bench.FloorRead(addr, conns, os.Stdout); err != nil {
		t.Fatal(err)
	}
}

func TestFloorWritesEveryFrame(t *testing.T) {
	const conns, frameBytes = 4, 193
	rep, err := bench.Floor(context.Background(), bench.FloorConfig{Conns: conns, Rate: 500, FrameBytes: frameBytes,
		Duration: 300 * time.Millisecond,
		Readers: func(addr string, n int) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^TestFloorReaders$")
			cmd.Env = append(os.Environ(), "AGENTLOOP_FLOOR_ADDR="+addr, "AGENTLOOP_FLOOR_CONNS="+strconv.Itoa(n))
			return cmd
		}})
	if err != nil {
		t.Fatal(err)
	}
	// Every frame written reached the other process, whole, and the writes
	// never outnumber the frames they carried.
	if rep.Frames < conns || rep.BytesRead != rep.Frames*frameBytes {
		t.Fatalf("%d frames of %d bytes written, %d bytes read", rep.Frames, frameBytes, rep.BytesRead)
	}
	if rep.Writes < conns || rep.Writes > rep.Frames || rep.FramesPerWrite < 1 {
		t.Fatalf("%d writes for %d frames (%.2f per write)", rep.Writes, rep.Frames, rep.FramesPerWrite)
	}
	// A frame is released per 1/rate per connection: no more than the
	// clock allows, one tick's worth of slack.
	if limit := int64(float64(conns) * 500 * (rep.WallSeconds + 0.002)); rep.Frames > limit {
		t.Fatalf("%d frames in %.3f s: more than the rate releases (%d)", rep.Frames, rep.WallSeconds, limit)
	}
	if rep.WriterMicrosPerFrame <= 0 || rep.ReaderCPUSeconds <= 0 {
		t.Fatalf("CPU not measured: writer %.2f µs per frame, readers %.3f s", rep.WriterMicrosPerFrame, rep.ReaderCPUSeconds)
	}
	var text bytes.Buffer
	bench.FormatFloor(&text, rep)
	for _, want := range []string{"writes only", "µs CPU per frame", "per write(2)", "another process"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, text.String())
		}
	}
}

func TestFloorRefusesABadConfig(t *testing.T) {
	for _, cfg := range []bench.FloorConfig{
		{Conns: 0, Rate: 1, FrameBytes: 10, Duration: time.Second},
		{Conns: 1, Rate: 0, FrameBytes: 10, Duration: time.Second},
		{Conns: 1, Rate: 1, FrameBytes: 1, Duration: time.Second},
		{Conns: 1, Rate: 1, FrameBytes: 10, Duration: 0},
	} {
		if _, err := bench.Floor(context.Background(), cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

// Readers that end before connecting make the run fail at once, saying
// what they printed, instead of waiting for connections that never come.
func TestFloorSaysWhyItsReadersFailed(t *testing.T) {
	_, err := bench.Floor(context.Background(), bench.FloorConfig{Conns: 2, Rate: 100, FrameBytes: 10, Duration: time.Second,
		Readers: func(string, int) *exec.Cmd { return exec.Command("sh", "-c", "echo too many open files >&2; exit 3") }})
	if err == nil || !strings.Contains(err.Error(), "too many open files") {
		t.Fatalf("err %v, want the readers' own message", err)
	}
}
