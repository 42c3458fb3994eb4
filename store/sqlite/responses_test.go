package sqlite

import (
	"testing"

	"agentloop/store/storetest"
)

// BenchmarkSaveResponse measures a stored save on the chained-HTTP path
// (storetest.BenchmarkSaveResponse).
func BenchmarkSaveResponse(b *testing.B) {
	storetest.BenchmarkSaveResponse(b, storetest.Harness{Open: openContract})
}

func BenchmarkGetResponse(b *testing.B) {
	storetest.BenchmarkGetResponse(b, storetest.Harness{Open: openContract})
}
