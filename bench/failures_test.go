package bench

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// TestFailureCounterCountsAllAndKeepsTheFirstFew: concurrent failures are
// all counted, and only maxErrorSamples messages are kept.
func TestFailureCounterCountsAllAndKeepsTheFirstFew(t *testing.T) {
	var count int
	var samples []string
	fail := failureCounter(&count, &samples)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() { fail(errors.New(fmt.Sprint("failure ", i))) })
	}
	wg.Wait()
	if count != 20 || len(samples) != maxErrorSamples {
		t.Fatalf("counted %d, kept %d samples: %v", count, len(samples), samples)
	}
}
