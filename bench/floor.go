package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"agentloop/inference"
)

// FloorConfig is a paced write load with nothing but the writes: Conns
// loopback TCP connections, each sent Rate frames of FrameBytes per second,
// released on a tick of at least inference.MinTick as the engine's scheduler
// releases tokens, and written by a goroutine per connection, woken per tick,
// in one write(2) per tick as the engine's WebSocket writer does. It is the
// cheapest any server can stream that pattern on this machine: the engine's
// figures for the same load (bench load) are read against it.
type FloorConfig struct {
	Conns      int
	Rate       float64 // frames per second per connection
	FrameBytes int
	Duration   time.Duration
	// OneWriter writes every connection from the tick's own loop, with no
	// goroutine per connection and no wake-ups: the other way to drive the
	// writes, cheaper per write but bounded by one core.
	OneWriter bool
	// Readers starts the reading side in its own process, so that this
	// process's CPU is the writers' alone: a command that dials addr conns
	// times, prints one line when every connection is up, reads and
	// discards until each is closed, and exits.
	Readers func(addr string, conns int) *exec.Cmd
}

// FloorReport is what a floor run measured.
type FloorReport struct {
	Conns           int     `json:"conns"`
	Rate            float64 `json:"rate_per_conn"`
	FrameBytes      int     `json:"frame_bytes"`
	OneWriter       bool    `json:"one_writer"`
	WallSeconds     float64 `json:"wall_seconds"`
	Frames          int64   `json:"frames"`
	Writes          int64   `json:"writes"`
	BytesRead       int64   `json:"bytes_read"`
	FramesPerSecond float64 `json:"frames_per_second"`
	FramesPerWrite  float64 `json:"frames_per_write"`
	// The writing process: the pacing loop, the wake-ups and the writes,
	// with the kernel's loopback work that runs inside write(2).
	WriterCores          float64 `json:"writer_cores"`
	WriterMicrosPerFrame float64 `json:"writer_cpu_us_per_frame"`
	WriterMicrosPerWrite float64 `json:"writer_cpu_us_per_write"`
	// The reading process: a plain read(2) per wake-up, nothing parsed.
	ReaderCores          float64 `json:"reader_cores"`
	ReaderMicrosPerFrame float64 `json:"reader_cpu_us_per_frame"`
	ReaderCPUSeconds     float64 `json:"reader_cpu_seconds"`
	MachineBusyCores     float64 `json:"machine_busy_cores"` // every process: other work is this minus the two above
	StealCores           float64 `json:"machine_steal_cores"`
}

// floorStream is one connection's writer: the tick adds to due and wakes
// it; it writes what is due since its last write as one write(2).
type floorStream struct {
	conn   net.Conn
	due    atomic.Int64
	wake   chan struct{}
	frames int64 // written, owned by the stream's goroutine
	writes int64
}

// send writes the frames due since the stream's last write in one write(2).
func (s *floorStream) send(frame, buf []byte) error {
	n := s.due.Load() - s.frames
	if n <= 0 {
		return nil
	}
	buf = buf[:0]
	for range n {
		buf = append(buf, frame...)
	}
	if _, err := s.conn.Write(buf); err != nil {
		return err
	}
	s.frames += n
	s.writes++
	return nil
}

// Floor runs a paced write load against readers in another process.
func Floor(ctx context.Context, cfg FloorConfig) (*FloorReport, error) {
	if cfg.Conns < 1 || cfg.Rate <= 0 || cfg.FrameBytes < 2 || cfg.FrameBytes > 4096 || cfg.Duration <= 0 {
		return nil, errors.New("bench floor: need conns ≥ 1, a positive rate and duration, and a frame of 2–4096 bytes")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	cmd := cfg.Readers(ln.Addr().String(), cfg.Conns)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var readErr bytes.Buffer
	cmd.Stderr = &readErr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// The readers print a line once every connection is up. If they end
	// first, closing the listener ends the wait for their connections.
	ready := bufio.NewReader(out)
	started := make(chan error, 1)
	go func() {
		_, err := ready.ReadString('\n')
		if err != nil {
			ln.Close()
		}
		started <- err
	}()
	streams := make([]*floorStream, 0, cfg.Conns)
	// readersFailed stops the readers and says why, with what they printed
	// (whole once they have been waited for).
	readersFailed := func(what string, err error) error {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		for _, s := range streams {
			_ = s.conn.Close()
		}
		return fmt.Errorf("bench floor: the readers %s: %v %s", what, err, strings.TrimSpace(readErr.String()))
	}
	for len(streams) < cfg.Conns {
		c, err := ln.Accept()
		if err != nil {
			return nil, readersFailed("ended before connecting", err)
		}
		streams = append(streams, &floorStream{conn: c, wake: make(chan struct{}, 1)})
	}
	if err := <-started; err != nil {
		return nil, readersFailed("did not start", err)
	}
	summary := make(chan string, 1) // the readers' last line: the bytes they read
	go func() {
		b, _ := io.ReadAll(ready)
		summary <- string(b)
	}()

	frame := floorFrame(cfg.FrameBytes)
	var wg sync.WaitGroup
	if !cfg.OneWriter {
		for _, s := range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, 0, 16*len(frame))
				for range s.wake {
					if s.send(frame, buf) != nil {
						return
					}
				}
			}()
		}
	}
	buf := make([]byte, 0, 16*len(frame))

	host0 := readHostCPU()
	start := host0.at
	released := make([]int64, len(streams))
	timer := time.NewTimer(0)
	<-timer.C
	for now := start; now.Sub(start) < cfg.Duration && ctx.Err() == nil; now = time.Now() {
		total := int64(now.Sub(start).Seconds() * cfg.Rate)
		for i, s := range streams {
			if total > released[i] {
				released[i] = total
				s.due.Store(total)
				if cfg.OneWriter {
					_ = s.send(frame, buf)
					continue
				}
				select {
				case s.wake <- struct{}{}:
				default:
				}
			}
		}
		// The next frame falls due 1/Rate after the last; wake then, but
		// not sooner than the engine's tick.
		next := start.Add(time.Duration(float64(total+1) / cfg.Rate * float64(time.Second)))
		timer.Reset(max(time.Until(next), inference.MinTick))
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	for _, s := range streams {
		close(s.wake)
	}
	wg.Wait()
	host := hostUsage(host0, readHostCPU())
	wall := time.Since(start)
	for _, s := range streams {
		_ = s.conn.Close()
	}
	last := <-summary
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("bench floor: the readers failed: %v %s", err, strings.TrimSpace(readErr.String()))
	}
	rep := &FloorReport{Conns: cfg.Conns, Rate: cfg.Rate, FrameBytes: cfg.FrameBytes, OneWriter: cfg.OneWriter, WallSeconds: wall.Seconds()}
	for _, s := range streams {
		rep.Frames += s.frames
		rep.Writes += s.writes
	}
	if _, err := fmt.Sscanf(last, "read %d", &rep.BytesRead); err != nil {
		return nil, fmt.Errorf("bench floor: the readers did not say what they read: %q", last)
	}
	if st, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rep.ReaderCPUSeconds = time.Duration(st.Utime.Nano() + st.Stime.Nano()).Seconds()
	}
	cpu := host.ClientCPUSeconds
	rep.FramesPerSecond = float64(rep.Frames) / wall.Seconds()
	rep.WriterCores = host.ClientCores
	rep.ReaderCores = rep.ReaderCPUSeconds / wall.Seconds()
	rep.MachineBusyCores, rep.StealCores = host.MachineBusyCores, host.StealCores
	if rep.Frames > 0 {
		rep.FramesPerWrite = float64(rep.Frames) / float64(rep.Writes)
		rep.WriterMicrosPerFrame = 1e6 * cpu / float64(rep.Frames)
		rep.WriterMicrosPerWrite = 1e6 * cpu / float64(rep.Writes)
		rep.ReaderMicrosPerFrame = 1e6 * rep.ReaderCPUSeconds / float64(rep.Frames)
	}
	return rep, nil
}

// FloorRead is the reading side of Floor, run in its own process: it dials
// addr conns times, prints "ready" once all are up, reads and discards until
// every connection is closed, and prints "read N" with the bytes it read.
func FloorRead(addr string, conns int, out io.Writer) error {
	cs := make([]net.Conn, 0, conns)
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		cs = append(cs, c)
	}
	fmt.Fprintln(out, "ready")
	var total atomic.Int64
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			n, _ := io.CopyBuffer(io.Discard, c, make([]byte, 32<<10))
			total.Add(n)
		}()
	}
	wg.Wait()
	_, err := fmt.Fprintf(out, "read %d\n", total.Load())
	return err
}

// FormatFloor writes a floor report as text.
func FormatFloor(w io.Writer, r *FloorReport) {
	how := "a goroutine per connection, woken per tick"
	if r.OneWriter {
		how = "one writer for every connection"
	}
	fmt.Fprintf(w, "floor: %d conns × %.0f frames/s of %d bytes, %.1f s, writes only (no engine), %s\n", r.Conns, r.Rate, r.FrameBytes, r.WallSeconds, how)
	fmt.Fprintf(w, "  frames   %d written in %d writes (%.2f per write), %d bytes read; %.0f frames/s (asked %.0f)\n",
		r.Frames, r.Writes, r.FramesPerWrite, r.BytesRead, r.FramesPerSecond, float64(r.Conns)*r.Rate)
	fmt.Fprintf(w, "  writer   %.2f cores: %.2f µs CPU per frame, %.2f per write(2)\n", r.WriterCores, r.WriterMicrosPerFrame, r.WriterMicrosPerWrite)
	fmt.Fprintf(w, "  readers  %.2f cores: %.2f µs CPU per frame (another process)\n", r.ReaderCores, r.ReaderMicrosPerFrame)
	fmt.Fprintf(w, "  machine  %.2f cores busy: other work %.2f; hypervisor steal %.2f\n", r.MachineBusyCores, max(r.MachineBusyCores-r.WriterCores-r.ReaderCores, 0), r.StealCores)
}

// floorFrame is a WebSocket text frame of size bytes in all, as a server
// sends it: FIN and text, then an unmasked length of 7 or 16 bits.
func floorFrame(size int) []byte {
	frame := bytes.Repeat([]byte{'x'}, size)
	if size-2 <= 125 {
		frame[0], frame[1] = 0x81, byte(size-2)
	} else {
		frame[0], frame[1], frame[2], frame[3] = 0x81, 126, byte((size-4)>>8), byte(size-4)
	}
	return frame
}
