// Package inference is the simulated accelerator behind the Responses engine.
//
// It owns:
//   - the tokenizer (tiktoken-go, o200k_base, vocabulary embedded, no download);
//   - the model profiles, one per api's built-in model name (classic,
//     spark, burst, and instant, which models no time at all): prefill rate,
//     base time to first token, batch size and seeded jitter, decoding at the
//     rate the name stands for; "custom-<tps>" runs spark at that rate;
//     and each profile's reasoning budget, the reasoning tokens a response
//     decodes per effort (Profile.ReasoningTokens: from the effort, the
//     seed and the turn only), which a Job decodes before its output;
//   - the prefix (KV) cache, partitioned by prompt_cache_key;
//   - the scheduler: one loop per scheduler that paces tokens against the
//     monotonic clock with continuous batching.
//
// What the model says is package policy's; inference only counts how long
// saying it takes. What is modelled here is accelerator time only (queue,
// prefill of uncached tokens, decode). The package must never do HTTP, SQL or
// socket I/O, and never ask which transport a request came from: every cost it
// models depends only on the work (tokens) it is given. Of agentloop it
// imports only api, the leaf package of wire types, for the model names;
// never policy, scenario or anything above them. It never starts a goroutine
// or a timer per token or per stream.
package inference
