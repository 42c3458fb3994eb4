package store

// LedgerRow is the usage of one response, stored or not.
type LedgerRow struct {
	ResponseID                              string
	CreatedAt                               int64 // unix seconds
	Model, Transport, Engine                string
	InputTokens, CachedTokens, OutputTokens int
	Stored                                  bool
}
