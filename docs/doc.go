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
