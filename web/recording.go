package web

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"agentloop/docs"
	"agentloop/rollout"
	"agentloop/views"
)

// RaceRecording is the recorded reference race the binary carries
// (docs/race-reference.json): a run of presenter mode's classroom race
// (RecordedRace), with when, where and how it was made. On a fresh install the
// home page and presenter mode play it as a race from the first second,
// labelled a recording; "Race it live" beside it starts a live one.
//
// agentloop race --reference docs/race-reference.json regenerates it.
type RaceRecording struct {
	Date    string            `json:"date"` // the day it ran, UTC
	Command string            `json:"command"`
	Machine string            `json:"machine"`
	Run     rollout.RunRecord `json:"run"`
}

// ReferenceCommand is the command that regenerates the recording.
const ReferenceCommand = "agentloop race --reference docs/race-reference.json"

// NewRaceRecording wraps a finished run of Preset as the reference
// recording: dated, with its command and this machine, and without the
// model's text and the tools' output, which the race track never shows.
func NewRaceRecording(rec *rollout.RunRecord) RaceRecording {
	run := *rec
	run.Turns = make([]rollout.Turn, len(rec.Turns))
	for i, t := range rec.Turns {
		t.Text, t.StackWork = "", nil
		calls := make([]rollout.Call, len(t.Calls))
		for k, c := range t.Calls {
			calls[k] = rollout.Call{Name: c.Name, CallID: c.CallID}
		}
		t.Calls = calls
		run.Turns[i] = t
	}
	return RaceRecording{Date: rec.CreatedAt.UTC().Format(time.DateOnly), Command: ReferenceCommand, Machine: machineWords(), Run: run}
}

// machineWords says what machine a recording ran on: "2 cores (AMD
// EPYC), linux/amd64".
func machineWords() string {
	cpu := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = " (" + strings.TrimSpace(v) + ")"
				break
			}
		}
	}
	return fmt.Sprintf("%d cores%s, %s/%s", runtime.NumCPU(), cpu, runtime.GOOS, runtime.GOARCH)
}

// carried is the recording the binary carries, read once.
var carried = sync.OnceValues(func() (RaceRecording, error) {
	var r RaceRecording
	if err := json.Unmarshal(docs.RaceReference(), &r); err != nil {
		return r, fmt.Errorf("docs/race-reference.json: %w", err)
	}
	if r.Run.ID == "" || len(r.Run.Turns) == 0 {
		return r, fmt.Errorf("docs/race-reference.json holds no race")
	}
	return r, nil
})

// recordingView is the carried recording for a page: its label and its
// race as the live feed's last frame (JSON), which the race track plays.
// A binary without one shows none.
func (p *Playground) recordingView() *views.Recording {
	r, err := carried()
	if err != nil {
		p.log.Error("the carried recording", "err", err)
		return nil
	}
	b, err := json.Marshal(p.liveFrame(storedSnapshot(&r.Run)))
	if err != nil {
		p.log.Error("the carried recording", "err", err)
		return nil
	}
	return &views.Recording{Label: r.label(), Frame: string(b)}
}

// label is what the page says the recording is: "A recording (2026-12-07,
// 2 cores (AMD EPYC), linux/amd64, agentloop race --reference …)".
func (r RaceRecording) label() string {
	return "A recording (" + r.Date + ", " + r.Machine + ", " + r.Command + ")"
}
