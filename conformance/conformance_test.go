package conformance

import "testing"

// TestTheSDKTypesTakeEverythingTheEngineSends: every capture of the
// matrix (capture_test.go) is what the openai npm package's declarations
// (tsc --strict) and openai-go's typed structs say it is.
func TestTheSDKTypesTakeEverythingTheEngineSends(t *testing.T) {
	t.Parallel()
	cs := captureAll(t)
	counts := map[string]int{}
	for _, c := range cs {
		counts[c.typ]++
	}
	t.Logf("%d captures: %v", len(cs), counts)
	t.Run("openai-go", func(t *testing.T) {
		clean := withoutDeviations(t, cs, false)
		checkGo(t, clean)
		checkGoCatchesMutations(t, clean)
	})
	t.Run("typescript", func(t *testing.T) { checkTypeScript(t, withoutDeviations(t, cs, true)) })
}
