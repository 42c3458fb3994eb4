// Package docs embeds the project's documents that the app serves itself,
// so that the page and the file are one text: /docs/stack renders
// stack.md, tables and all, and keeps no second copy of them.
package docs

import _ "embed"

//go:embed stack.md
var stack []byte

// Stack is docs/stack.md as written: the modelled API stack, its presets
// and their readings, the calibration record and the sensitivity table.
func Stack() []byte { return stack }

//go:embed sweep-reference.json
var sweepReference []byte

// SweepReference is the reference sweep the /sweep page shows on a fresh
// install: agentloop bench sweep --json's output, with its date, command
// and settings.
func SweepReference() []byte { return sweepReference }

//go:embed race-reference.json
var raceReference []byte

// RaceReference is the recorded reference race the home page and
// presenter mode play on a fresh install: agentloop race --reference's
// output (web.RaceRecording), with its date, command and machine.
func RaceReference() []byte { return raceReference }
