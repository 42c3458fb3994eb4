package clients

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"agentloop/check"
)

// codexCard is Codex CLI 0.171.0's report card (docs/guarantees.md,
// "Codex CLI's report card"): over WebSocket mode it never sends a
// create over HTTP unless the upgrade is refused, so the 429 and the
// HTTP chaining are not exercised.
var codexCard = map[string]check.Verdict{
	check.ContinuationSendsNewItems:        check.Pass,
	check.RecoversPreviousResponseNotFound: check.Pass,
	check.ReconnectsAtConnectionLimit:      check.Pass,
	check.HonoursRetryAfter:                check.NotExercised,
	check.HandlesConnectionLimitError:      check.Pass,
	check.FallsBackWhenUpgradeRefused:      check.Pass,
	check.SurvivesDropMidStream:            check.Pass,
	check.ReadsWrappedErrorFrames:          check.Pass,
	check.OneResponseInFlight:              check.Pass,
	check.StoreFalseConsistency:            check.NotExercised,
	check.ContinuesTheNewestResponse:       check.Pass,
}

// codexCheckArgs is the README's command line ("Grade your client"):
// Codex's provider takes its URL from its config, so {base_url} goes in a
// -c override.
func codexCheckArgs(work string, transport codexTransport) []string {
	return []string{"exec", "--json", "--skip-git-repo-check", "--ephemeral", "-C", work,
		"-c", `model="instant"`, "-c", `model_provider="agentloop"`,
		"-c", `approval_policy="never"`, "-c", `sandbox_mode="read-only"`,
		"-c", `model_providers.agentloop.name="agentloop"`,
		"-c", `model_providers.agentloop.base_url="{base_url}"`,
		"-c", `model_providers.agentloop.env_key="OPENAI_API_KEY"`,
		"-c", `model_providers.agentloop.wire_api="responses"`,
		"-c", fmt.Sprintf("model_providers.agentloop.supports_websockets=%t", bool(transport)),
		codexPrompt}
}

// TestCodexReportCard grades Codex with the whole gauntlet, as the
// README's command line does, and holds it to its recorded card.
func TestCodexReportCard(t *testing.T) {
	t.Parallel()
	gradeCodex(t, webSocketMode, check.All, codexCard)
}

// TestCodexReportCardOverHTTP grades Codex over HTTP on the 429 a
// WebSocket client never meets: it waits at least the hinted delay.
func TestCodexReportCardOverHTTP(t *testing.T) {
	t.Parallel()
	gradeCodex(t, httpOnly, []*check.Check{check.Lookup(check.HonoursRetryAfter)},
		map[string]check.Verdict{check.HonoursRetryAfter: check.Pass})
}

// gradeCodex runs the gauntlet's checks on Codex over transport and holds
// each verdict to card.
func gradeCodex(t *testing.T, transport codexTransport, checks []*check.Check, card map[string]check.Verdict) {
	t.Helper()
	codex := findCodex(t)
	if codex.version != "0.171.0" {
		t.Skipf("the card is recorded for Codex CLI 0.171.0, not %s", codex.version)
	}
	eng := startEngine(t)
	root := t.TempDir()
	env := privateEnv(t, root)
	work := filepath.Join(root, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	var out, progress bytes.Buffer
	rep, err := check.Run(context.Background(), check.Config{Server: eng.app.URL(), Command: append([]string{codex.path}, codexCheckArgs(work, transport)...),
		Env: env, Checks: checks, TimeLimit: codexTimeout, ClientOutput: &out, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	check.WriteText(&text, rep)
	t.Logf("%s\n%s", progress.String(), text.String())
	for _, r := range rep.Results {
		if want := card[r.ID]; r.Verdict != want {
			for _, ev := range r.Evidence {
				t.Log(ev.String())
			}
			t.Errorf("%s: %s (%s), the recorded card says %s", r.ID, r.Verdict, r.Reason, want)
		}
	}
	if t.Failed() {
		t.Logf("Codex's output:\n%s", out.String())
	}
	if took := time.Duration(rep.EndedUnixNS - rep.StartedUnixNS); took > 0 {
		t.Logf("the gauntlet took %s", took.Round(time.Second))
	}
}
