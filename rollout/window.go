package rollout

import (
	"encoding/json"

	"agentloop/api"
	"agentloop/inference"
	"agentloop/workload"
)

// Context windows and compaction in a race (docs/protocol.md, "Context
// windows" and "Compaction"). A workload is replayed whole, so each turn's
// prompt holds every turn before it; compact_threshold makes every lane
// ask for compaction (context_management), so the engine compacts once a
// prompt passes it, and the stateless lanes prune their history before
// the latest compaction item as a client should (pruneCompacted).

// CheckWorkloadFits refuses, at upload, a workload that none of windows
// holds whole, naming the first turn that passes the largest.
func CheckWorkloadFits(w *workload.Workload, windows inference.Windows) *api.Error {
	model, window := windows.Largest()
	if turn, n := w.FirstOverWindow(window); turn >= 0 {
		return api.BadRequest("workload", api.CodeInvalidValue,
			"Invalid workload: turns[%d]: its prompt reaches %d tokens, more than any model's context window holds (the largest, %s's, is %d tokens).",
			turn, n, model, window)
	}
	return nil
}

// checkContext holds a race to its model's context window among windows:
// without compaction every turn of a workload must fit it whole; with
// compact_threshold (a workload race only) the threshold must lie within
// the window, and each turn's own request must fit once what came before
// it is compacted.
func checkContext(cfg *Config, windows inference.Windows) *api.Error {
	t := cfg.CompactThreshold
	if _, largest := windows.Largest(); t < 0 || t > largest {
		return api.BadRequest("compact_threshold", api.CodeInvalidValue,
			"compact_threshold must be 0 (no compaction) or from 1 to %d tokens.", largest)
	}
	if t > 0 && cfg.Workload == nil {
		return api.BadRequest("compact_threshold", api.CodeInvalidValue,
			"compact_threshold needs a workload race: a scenario's agent reads its steps from the history that compaction replaces.")
	}
	if cfg.Workload == nil {
		return nil
	}
	window := windows.Of(cfg.Model())
	if t == 0 {
		if turn, n := cfg.Workload.FirstOverWindow(window); turn >= 0 {
			return api.BadRequest("workload", api.CodeInvalidValue,
				"turns[%d] of the workload reaches %d tokens, over %s's %d-token context window: set compact_threshold to compact, or pick a profile with a larger window.",
				turn, n, cfg.Profile, window)
		}
		return nil
	}
	if window > 0 && t > window {
		return api.BadRequest("compact_threshold", api.CodeInvalidValue,
			"compact_threshold %d passes %s's %d-token context window: its requests would be refused before they compact.", t, cfg.Profile, window)
	}
	if turn, n := cfg.Workload.FirstTurnOverWindow(window); turn >= 0 {
		return api.BadRequest("workload", api.CodeInvalidValue,
			"turns[%d] of the workload is a %d-token request on its own, over %s's %d-token context window even compacted.", turn, n, cfg.Profile, window)
	}
	return nil
}

// contextManagement is the create parameter that asks for compaction at
// threshold tokens (0: none).
func contextManagement(threshold int) []map[string]any {
	if threshold <= 0 {
		return nil
	}
	return []map[string]any{{"type": api.ContextManagementCompaction, "compact_threshold": threshold}}
}

// pruneCompacted drops, from a history that holds a compaction item, what
// the latest one replaced (api.CompactionKept), as the hosted API's
// documentation suggests a stateless client do.
func pruneCompacted(history []json.RawMessage) []json.RawMessage {
	latest := -1
	items := make([]api.Item, len(history))
	for i, raw := range history {
		it, err := api.DecodeItem(raw, "history")
		if err != nil {
			return history // the engine's own items: never
		}
		items[i] = it
		if it.Type == api.TypeCompaction {
			latest = i
		}
	}
	if latest < 0 {
		return history
	}
	kept := api.CompactionKept(items[:latest])
	out := make([]json.RawMessage, 0, len(history))
	for i := range latest {
		if kept[i] {
			out = append(out, history[i])
		}
	}
	return append(out, history[latest:]...)
}
