package inspect

import (
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf8"

	"agentloop/api"
	"agentloop/workload"
)

// shapedTurn is a finished generating turn adding one item of in tokens
// and answering out tokens with calls.
func shapedTurn(i int, kind string, in, out int, calls ...int) Turn {
	return Turn{Index: i, StartedUnixNS: t0 + int64(i)*1e9, DurationNS: 1e8, InputTokens: in, OutputTokens: out,
		Shape: &api.Shape{InstructionsTokens: 50, ToolsTokens: 20, Tools: 1, Generated: true,
			New: []api.ShapeItem{{Kind: kind, Tokens: in}}, Calls: calls}}
}

// exported exports s and checks that the export decodes, as a file does.
func exported(t *testing.T, s *Session) *workload.Workload {
	t.Helper()
	w, err := Workload(s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := w.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workload.Parse(b); err != nil {
		t.Fatalf("the export does not decode: %v", err)
	}
	return w
}

// TestExportCutsTheDescriptionAtCharacters: a client name of non-ASCII
// characters past the description's length is cut at a character, and
// the export decodes.
func TestExportCutsTheDescriptionAtCharacters(t *testing.T) {
	s := &Session{ID: "sess_12", Transport: TransportHTTP, Client: api.Client{UserAgent: strings.Repeat("é", 300)},
		Turns: []Turn{shapedTurn(0, "user", 10, 5)}}
	w := exported(t, s)
	if !utf8.ValidString(w.Description) || utf8.RuneCountInString(w.Description) != workload.MaxDescriptionLen {
		t.Fatalf("description %q", w.Description)
	}
}

// TestExportCutsALongSessionToFit: a session past 1,000 turns or
// 1,000,000 tokens exports its first turns that fit, and says so.
func TestExportCutsALongSessionToFit(t *testing.T) {
	long := &Session{ID: "sess_long", Transport: TransportWebSocket}
	for i := range 1200 {
		long.Turns = append(long.Turns, shapedTurn(i, "user", 10, 5))
	}
	w := exported(t, long)
	if len(w.Turns) != workload.MaxTurns || !strings.HasSuffix(w.Description, "; the first 1000 turns") {
		t.Fatalf("%d turns, %q", len(w.Turns), w.Description)
	}
	big := &Session{ID: "sess_big", Transport: TransportWebSocket}
	for i := range 20 {
		big.Turns = append(big.Turns, shapedTurn(i, "user", 100_000, 1000))
	}
	w = exported(t, big)
	if len(w.Turns) != 9 || !strings.HasSuffix(w.Description, "; the first 9 turns") {
		t.Fatalf("%d turns, %q", len(w.Turns), w.Description)
	}
	huge := &Session{ID: "sess_huge", Transport: TransportWebSocket, Turns: []Turn{shapedTurn(0, "user", 5_000_000, 1000)}}
	huge.Turns[0].Shape.New = append(huge.Turns[0].Shape.New, huge.Turns[0].Shape.New...)
	for i := range huge.Turns[0].Shape.New {
		huge.Turns[0].Shape.New[i].Tokens = 900_000
	}
	if w := exported(t, huge); len(w.Turns) != 1 {
		t.Fatalf("%d turns", len(w.Turns))
	}
}

// FuzzWorkloadExport: any session of turns with shapes exports a workload
// that decodes; none is refused for its size or its text.
func FuzzWorkloadExport(f *testing.F) {
	f.Add("codex_exec/0.1", []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add(strings.Repeat("ü", 200), []byte{255, 255, 255, 255, 255, 255, 255, 255, 0, 0, 0, 0, 1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, client string, b []byte) {
		s := &Session{ID: "sess_f", Transport: TransportHTTP, Client: api.Client{UserAgent: client}}
		kinds := []string{"user", "tool_output", "developer", "system", "assistant"}
		// Each 8 bytes are a turn: flags, kinds, sizes, calls; with the
		// first byte's top bit, the turns repeat past 1,000.
		reps := 1
		if len(b) >= 8 && b[0]&0x80 != 0 {
			reps = 1100/(len(b)/8) + 1
		}
		for rep := 0; len(b) >= 8 && rep < reps; rep++ {
			for i := 0; i+8 <= len(b); i += 8 {
				c := b[i : i+8]
				n := len(s.Turns)
				tokens := int(binary.BigEndian.Uint16(c[2:4])) * int(c[4]) // up to about 16M
				tr := Turn{Index: n, StartedUnixNS: t0 + int64(n)*int64(c[5])*1e7, DurationNS: int64(c[6]) * 1e6,
					InputTokens: tokens, OutputTokens: int(c[7]) * int(c[4]),
					Shape: &api.Shape{InstructionsTokens: int(c[1])*1000 - 1, ToolsTokens: tokens, Tools: int(c[5]) * 10, Generated: c[0]&1 == 0}}
				if c[0]&2 != 0 {
					tr.Error = "failed"
				}
				for k := 0; k < int(c[0]>>2)%8; k++ {
					tr.Shape.New = append(tr.Shape.New, api.ShapeItem{Kind: kinds[(int(c[1])+k)%len(kinds)], Tokens: tokens >> k})
				}
				for k := 0; k < int(c[6])%9; k++ {
					tr.Shape.Calls = append(tr.Shape.Calls, int(c[7])<<k%300_000)
				}
				s.Turns = append(s.Turns, tr)
			}
		}
		w, err := Workload(s)
		if err != nil {
			if strings.Contains(err.Error(), "no finished turn") {
				return
			}
			t.Fatalf("export refused: %v", err)
		}
		enc, err := w.Canonical()
		if err != nil {
			t.Fatalf("export does not encode: %v", err)
		}
		if _, err := workload.Parse(enc); err != nil {
			t.Fatalf("export does not decode: %v", err)
		}
	})
}
