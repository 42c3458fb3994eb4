package check

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"agentloop/store"
)

// MaxReportBytes bounds a report posted to POST /api/checks: a card's
// evidence is a few kilobytes.
const MaxReportBytes = 1 << 20

// NewID draws a report card's id.
func NewID() string {
	var b [9]byte
	_, _ = rand.Read(b[:])
	return "card_" + hex.EncodeToString(b[:])
}

// Record is the report as the store keeps it, under a new id (set on r
// too).
func Record(r *Report) (*store.CheckReport, error) {
	r.ID = NewID()
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return &store.CheckReport{ID: r.ID, CreatedAt: time.Unix(0, r.StartedUnixNS), Client: strings.Join(r.Client, " "),
		Passed: r.Passed, Failed: r.Failed, NotExercised: r.NotExercised, JSON: b}, nil
}

// DecodeReport reads a report strictly: unknown fields, an unknown check
// or verdict, and a repeated check are errors; the totals are counted
// again from the results, never taken as sent.
func DecodeReport(b []byte) (*Report, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("not a report: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not a report: more than one JSON value")
	}
	if r.Object != "check.report" {
		return nil, errors.New(`object must be "check.report"`)
	}
	if len(r.Client) == 0 {
		return nil, errors.New("client is empty")
	}
	if len(r.Results) == 0 {
		return nil, errors.New("results is empty")
	}
	var seen []string
	for i, res := range r.Results {
		if Lookup(res.ID) == nil {
			return nil, fmt.Errorf("results[%d].id: unknown check %q", i, res.ID)
		}
		if slices.Contains(seen, res.ID) {
			return nil, fmt.Errorf("results[%d].id: %s is graded twice", i, res.ID)
		}
		seen = append(seen, res.ID)
		switch res.Verdict {
		case Pass, Fail, NotExercised:
		default:
			return nil, fmt.Errorf("results[%d].verdict: %q is not pass, fail or not_exercised", i, res.Verdict)
		}
	}
	r.count()
	return &r, nil
}
