package check

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteText prints the report card for a terminal: a line per check with
// its verdict and reason, then the evidence of each check that failed.
func WriteText(w io.Writer, r *Report) {
	fmt.Fprintf(w, "report card for %s\n", strings.Join(r.Client, " "))
	for _, res := range r.Results {
		fmt.Fprintf(w, "  %-14s %-38s %s\n", strings.ToUpper(string(res.Verdict)), res.ID, res.Reason)
		if res.Verdict == Fail {
			for _, ev := range res.Evidence {
				fmt.Fprintf(w, "  %14s   %s\n", "", ev.String())
			}
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d not exercised in %s\n", r.Passed, r.Failed, r.NotExercised,
		time.Duration(r.EndedUnixNS-r.StartedUnixNS).Round(time.Millisecond))
}

// String is a line of evidence.
func (e Evidence) String() string {
	s := ""
	if e.Turn > 0 {
		s = fmt.Sprintf("turn %d: ", e.Turn)
	}
	s += e.Event
	if e.ResponseID != "" {
		s += " (" + e.ResponseID + ")"
	}
	return s
}

// JUnit XML: one test suite, one test case per check; a fail is a
// <failure>, not_exercised a <skipped>, so CI systems show the card
// natively.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func seconds(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }

// WriteJUnit writes the report as JUnit XML.
func WriteJUnit(w io.Writer, r *Report) error {
	s := junitSuite{Name: "agentloop check", Tests: len(r.Results), Failures: r.Failed, Skipped: r.NotExercised,
		Time: seconds((r.EndedUnixNS - r.StartedUnixNS) / 1e6)}
	for _, res := range r.Results {
		var ev strings.Builder
		for _, e := range res.Evidence {
			ev.WriteString(e.String() + "\n")
		}
		c := junitCase{Name: res.ID, ClassName: "agentloop.check", Time: seconds(res.DurationMS),
			SystemOut: "passes when the client " + res.Passes + "\n" + res.Reason + "\n" + ev.String()}
		switch res.Verdict {
		case Fail:
			c.Failure = &junitMessage{Message: res.Reason, Text: ev.String()}
		case NotExercised:
			c.Skipped = &junitMessage{Message: "not_exercised: " + res.Reason}
		}
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
