package workload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// lines reads a line-per-record file (JSONL, an asciinema recording):
// at most maxBytes in all and maxLine bytes a line, skipping blank lines,
// and counting lines from 1 for the errors that name them.
type lines struct {
	sc      *bufio.Scanner
	n       int // the number of the line Bytes holds
	maxLine int
}

func newLines(r io.Reader, maxBytes int64, maxLine int) *lines {
	sc := bufio.NewScanner(io.LimitReader(r, maxBytes))
	sc.Buffer(make([]byte, min(64<<10, maxLine)), maxLine) // the larger of the two bounds a line
	return &lines{sc: sc, maxLine: maxLine}
}

// Scan moves to the next line that is not blank.
func (l *lines) Scan() bool {
	for l.sc.Scan() {
		l.n++
		if len(bytes.TrimSpace(l.sc.Bytes())) > 0 {
			return true
		}
	}
	return false
}

// Bytes is the current line, valid until the next Scan.
func (l *lines) Bytes() []byte { return l.sc.Bytes() }

// Line is the current line's number.
func (l *lines) Line() int { return l.n }

// Err is the error that stopped Scan, as an *Error naming the line.
func (l *lines) Err() error {
	err := l.sc.Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bufio.ErrTooLong):
		return errorf(fmt.Sprintf("line %d", l.n+1), "longer than %d bytes", l.maxLine)
	}
	return &Error{Message: "reading: " + err.Error()}
}
