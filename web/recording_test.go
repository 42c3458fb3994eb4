package web

import (
	"encoding/json"
	"strings"
	"testing"

	"agentloop/rollout"
)

// TestCarriedRecording: the recording the binary carries is a passed run
// of presenter mode's classroom race (RecordedRace), dated, with its command and machine,
// and every lane has its turns and its total. When the preset changes,
// this fails until the recording is made again with ReferenceCommand.
func TestCarriedRecording(t *testing.T) {
	r, err := carried()
	if err != nil {
		t.Fatal(err)
	}
	if r.Date == "" || r.Machine == "" || r.Command != ReferenceCommand {
		t.Errorf("the recording says date %q, machine %q, command %q", r.Date, r.Machine, r.Command)
	}
	if r.Run.Status != rollout.StatusPassed || r.Run.Summary == nil || r.Run.Summary.Headline == "" {
		t.Fatalf("the recorded run is %s with summary %v", r.Run.Status, r.Run.Summary)
	}
	// The recorded race is the classroom's as the run API takes it
	// (normalized), field for field.
	want := RecordedRace()
	if err := rollout.Normalize(&want); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(r.Run.Config)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("the recording ran\n%s\nnot the classroom race\n%s\nrun %s", gotJSON, wantJSON, ReferenceCommand)
	}
	snap := storedSnapshot(&r.Run)
	if len(snap.Lanes) != len(want.Lanes) {
		t.Fatalf("%d lanes recorded, want %d", len(snap.Lanes), len(want.Lanes))
	}
	for _, l := range snap.Lanes {
		if l.Status != rollout.StatusPassed || len(l.Turns) < 2 || l.ElapsedNS <= 0 {
			t.Errorf("lane %s: %s, %d turns, %d ns", l.Lane, l.Status, len(l.Turns), l.ElapsedNS)
		}
		for _, tr := range l.Turns {
			if tr.Text != "" || len(tr.StackWork) > 0 {
				t.Fatalf("lane %s keeps the model's text or the stack's work", l.Lane)
			}
		}
	}
}

// TestRecordingPage: the home page and presenter mode carry the recording
// as the live feed's last frame, labelled a recording.
func TestRecordingPage(t *testing.T) {
	tp := newTestPlayground(t)
	v := tp.pg.recordingView()
	if v == nil {
		t.Fatal("no recording to show")
	}
	if !strings.HasPrefix(v.Label, "A recording (") || !strings.Contains(v.Label, ReferenceCommand) {
		t.Errorf("label %q", v.Label)
	}
	var frame liveFrame
	if err := json.Unmarshal([]byte(v.Frame), &frame); err != nil {
		t.Fatal(err)
	}
	if !frame.Final() || frame.Summary == nil || frame.Fairness == "" || len(frame.Lanes) == 0 {
		t.Errorf("the frame is not a finished race's: status %s, fairness %q", frame.Status, frame.Fairness)
	}
}
