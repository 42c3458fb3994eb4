package store

// Item is one conversation item, stored once under a server-assigned key.
// The id the client sent is kept as an attribute: clients reuse or invent ids.
type Item struct {
	Key    int64  // 0 = not stored yet; SaveResponse assigns it and writes it back
	ItemID string // the id on the wire ("msg_…", "fc_…"); may be empty or duplicated
	Type   string // "message", "function_call", ...
	JSON   []byte // the item as it appears on the wire
}

// Response is a stored (store:true) response with its full context.
type Response struct {
	ID                 string
	CreatedAt          int64 // unix seconds
	Model              string
	PreviousResponseID string
	Snapshot           []byte // the full Response JSON as returned to the client
	Tools              []byte // tools JSON array, as sent
	Context            []Item // the full context in order: inherited items, then this response's own input
	InputStart         int    // Context[InputStart:] is this response's own input
	Output             []Item // the output items the engine produced
	RenderedTokens     int    // tokens the context renders to, so a continuation need not recount
}
