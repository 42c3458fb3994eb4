package inference

import (
	"math"
	"strconv"
	"time"

	"agentloop/api"
)

// Profile describes one simulated model and the accelerator that serves it.
// Jobs with equal Profiles share one batch on a Scheduler; a modified copy
// (for example Unmodelled) gets an accelerator of its own.
//
// Zero values turn modelled time off: BaseTTFT 0 and PrefillTPS <= 0 make
// prefill instant, and DecodeTPS <= 0 releases every token at the first
// token. MaxBatch <= 0 means an unbounded batch. See Profile.Unmodelled.
type Profile struct {
	Name          string
	DecodeTPS     float64       // tokens/s per stream when the batch is light
	PrefillTPS    float64       // uncached prompt tokens per second
	BaseTTFT      time.Duration // fixed time before the first token
	MaxBatch      int           // concurrent streams; beyond it, requests wait in the queue
	BatchSlowdown float64       // fraction by which per-stream decode slows when the batch is full
	Jitter        float64       // ± fraction applied to rates and TTFT, drawn from a hash
	// Reasoning is the mean reasoning tokens of a response at each effort
	// (Profile.ReasoningTokens draws a response's count around it).
	Reasoning ReasoningBudget
	// ContextWindow is the most prompt tokens a request may hold
	// (instructions, tools and context, as usage counts input_tokens);
	// beyond it the engine answers context_length_exceeded or, with
	// truncation "auto", drops the oldest items (docs/protocol.md, "Context
	// windows"). 0 is unbounded. Not a cost: Unmodelled keeps it.
	ContextWindow int
}

// The built-in profiles, one per api's built-in model name and in its order
// (slowest first). Each decodes at the rate its name stands for
// (api.BuiltinModels); the rest is the accelerator's. The figures are
// plausible for hosted models of each class, not measurements of any one of
// them:
//
//	profile  decode      prefill      base TTFT  batch      slowdown at full batch
//	classic  65 tok/s    2,000 tok/s  400 ms     64         30 %
//	spark    1000 tok/s  20,000 tok/s 80 ms      512        none (only queueing beyond 512)
//	burst    4000 tok/s  50,000 tok/s 40 ms      256        15 %
//	instant  unpaced     instant      0          unbounded  none
//
// Every profile reasons with StandardReasoning (below): its tokens decode at
// the profile's rate, so the same effort takes classic 16 times as long as
// spark, and instant no time at all.
//
// Context windows (ContextWindow; docs/stack.md, "Context windows and
// compaction", says which figure is cited and which derived):
//
//	classic  400,000 tokens   spark  128,000   burst  128,000   instant  unbounded
//
// instant, the load tests' model, holds whatever a body can carry.
//
// Every profile but instant jitters its rates and TTFT by ±5 %, per request,
// from the Job's JitterSeed. instant models no time at all: its jobs still go
// through the scheduler, and all their tokens fall due at admission.
var builtinProfiles = profilesFor(api.BuiltinModels(), map[string]Profile{
	api.ModelClassic: {PrefillTPS: 2000, BaseTTFT: 400 * time.Millisecond, MaxBatch: 64, BatchSlowdown: 0.3, Jitter: 0.05, ContextWindow: 400_000, Reasoning: StandardReasoning},
	api.ModelSpark:   {PrefillTPS: 20000, BaseTTFT: 80 * time.Millisecond, MaxBatch: 512, BatchSlowdown: 0, Jitter: 0.05, ContextWindow: 128_000, Reasoning: StandardReasoning},
	api.ModelBurst:   {PrefillTPS: 50000, BaseTTFT: 40 * time.Millisecond, MaxBatch: 256, BatchSlowdown: 0.15, Jitter: 0.05, ContextWindow: 128_000, Reasoning: StandardReasoning},
	api.ModelInstant: {Reasoning: StandardReasoning},
})

// ReasoningBudget is a model's mean reasoning tokens per response at each
// reasoning effort the SDK declares (api.ReasoningEfforts); "none" reasons
// not at all. It is a struct of counts, not a map, so that a Profile stays
// comparable (it keys the scheduler's batches).
type ReasoningBudget struct {
	Minimal, Low, Medium, High, XHigh, Max int
}

// StandardReasoning is the built-in profiles' reasoning budget: the mean
// reasoning tokens of one agent turn (a tool call or a short answer) at
// each effort, a derived parameter (docs/stack.md, "Derived parameters
// outside the stack"): a few dozen tokens at minimal, hundreds at low and
// medium, thousands from high up.
var StandardReasoning = ReasoningBudget{Minimal: 32, Low: 256, Medium: 768, High: 2048, XHigh: 4096, Max: 8192}

// ReasoningSpread is how far a response's reasoning tokens fall from its
// effort's mean: drawn uniformly within ± this fraction of it.
const ReasoningSpread = 0.5

// Mean is the budget's mean for effort; 0 for "none", "" and an effort it
// does not know.
func (b ReasoningBudget) Mean(effort string) int {
	switch effort {
	case "minimal":
		return b.Minimal
	case "low":
		return b.Low
	case "medium":
		return b.Medium
	case "high":
		return b.High
	case "xhigh":
		return b.XHigh
	case "max":
		return b.Max
	}
	return 0
}

// saltReasoning keeps the reasoning draw independent of the jitter draws.
const saltReasoning = 0x5245_4153

// ReasoningTokens is the reasoning tokens of a response at effort: the
// budget's mean, spread by ±ReasoningSpread with a draw from the seed and
// the turn (the agent turns before this response in its context), at least
// 1 when the effort reasons. It depends on nothing else, so every transport
// gets the same count for the same turn.
func (p Profile) ReasoningTokens(effort string, seed int64, turn int) int {
	mean := p.Reasoning.Mean(effort)
	if mean <= 0 {
		return 0
	}
	h := HashStrings(uint64(seed), "reasoning", effort, strconv.Itoa(turn))
	n := float64(mean) * (1 + ReasoningSpread*(2*unitDraw(h, saltReasoning)-1))
	return max(int(math.Round(n)), 1)
}

// profilesFor names each shape after its model and gives it the model's
// decode rate. Every built-in name needs a shape, and every shape a name.
func profilesFor(models []api.BuiltinModel, shapes map[string]Profile) []Profile {
	if len(shapes) != len(models) {
		panic("inference: the profiles and api's built-in model names differ")
	}
	out := make([]Profile, 0, len(models))
	for _, m := range models {
		p, ok := shapes[m.Name]
		if !ok {
			panic("inference: no profile for the built-in model " + m.Name)
		}
		p.Name, p.DecodeTPS = m.Name, m.DecodeTPS
		out = append(out, p)
	}
	return out
}

// DefaultProfile is the profile that serves any model name that is not a
// built-in profile's name.
const DefaultProfile = api.DefaultModel

// Profiles returns the built-in profiles, slowest first.
func Profiles() []Profile {
	return append([]Profile(nil), builtinProfiles...)
}

// ProfileFor returns the profile for a request's model name: the built-in
// profile of that name; for "custom-<tps>" (see api.ParseCustomModel), spark
// decoding at tps, named after the custom model; for any other name, spark (the caller echoes the model
// name as sent).
func ProfileFor(model string) Profile {
	for _, p := range builtinProfiles {
		if p.Name == model {
			return p
		}
	}
	for _, p := range builtinProfiles {
		if p.Name == DefaultProfile {
			if tps, ok := api.ParseCustomModel(model); ok {
				p.Name, p.DecodeTPS = model, float64(tps) // a custom name is canonical (api.ParseCustomModel)
			}
			return p
		}
	}
	panic("inference: default profile missing")
}

// Unmodelled returns p with every modelled cost set to zero: no base TTFT,
// instant prefill and decode, no jitter and no batch limit. The overhead
// benchmark uses it so that only measured work remains.
func (p Profile) Unmodelled() Profile {
	p.BaseTTFT = 0
	p.PrefillTPS = 0
	p.DecodeTPS = 0
	p.MaxBatch = 0
	p.BatchSlowdown = 0
	p.Jitter = 0
	return p
}

// sanitized replaces NaN fields with 0 (no modelled cost). Profiles key the
// scheduler's batches, and a NaN key could never be found again.
func (p Profile) sanitized() Profile {
	for _, f := range []*float64{&p.DecodeTPS, &p.PrefillTPS, &p.BatchSlowdown, &p.Jitter} {
		if math.IsNaN(*f) {
			*f = 0
		}
	}
	return p
}

// Salts that keep the jitter draws of one job independent of each other.
const (
	saltTTFT    = 0x5446_5446
	saltPrefill = 0x5052_4546
	saltDecode  = 0x4445_434f
)

// jitterFactor returns 1 ± jitter, drawn from seed and salt.
func (p Profile) jitterFactor(seed, salt uint64) float64 {
	j := math.Min(math.Max(p.Jitter, 0), 0.9)
	return 1 + j*(2*unitDraw(seed, salt)-1)
}

// Prefill returns the job's modelled time from admission to its first token:
// the base TTFT plus the uncached prompt tokens at the prefill rate, each
// jittered from the job's seed.
func (j Job) Prefill() time.Duration {
	p := j.Profile
	d := float64(p.BaseTTFT) * p.jitterFactor(j.JitterSeed, saltTTFT)
	if j.Resumed {
		d = 0 // sampling was blocked, not restarted
	}
	if p.PrefillTPS > 0 && j.PrefillTokens > 0 {
		rate := p.PrefillTPS * p.jitterFactor(j.JitterSeed, saltPrefill)
		d += float64(j.PrefillTokens) / rate * float64(time.Second)
	}
	return time.Duration(d)
}

// DecodeRate returns the job's decode rate in tokens/s when active streams
// (this one included) share its accelerator, or 0 when decode is instant.
// The rate falls linearly with the batch, by BatchSlowdown at a full batch.
func (j Job) DecodeRate(active int) float64 {
	p := j.Profile
	if p.DecodeTPS <= 0 {
		return 0
	}
	rate := p.DecodeTPS * p.jitterFactor(j.JitterSeed, saltDecode)
	if p.MaxBatch > 0 && p.BatchSlowdown > 0 {
		load := float64(min(max(active, 0), p.MaxBatch)) / float64(p.MaxBatch)
		// Never slower than 5 % of the light-batch rate, so a stream always ends.
		rate *= math.Max(1-p.BatchSlowdown*load, 0.05)
	}
	return rate
}
