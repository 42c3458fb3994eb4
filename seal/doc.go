// Package seal owns the opaque blobs agentloop hands to clients and must
// later trust again: a reasoning item's encrypted_content and a compaction
// item's blob. Only the server that holds the key can open them; a blob
// that was changed, made under another key or made for another kind of
// item does not open.
//
// It owns:
//   - the key: NewKey makes one, ParseKey reads the text form that
//     --seal-key takes and Key.String writes (the store keeps it; that
//     wiring is the server's);
//   - Sealer.Seal and Sealer.Open: AES-256-GCM (the standard library's)
//     with a random 96-bit nonce, the kind and the version byte bound in
//     as additional data, written as standard base64;
//   - the blob's size: BytesPerReasoningToken, a derived parameter (see
//     docs/stack.md, "Derived parameters outside the stack"), and
//     ReasoningPayload and BlobLen, its arithmetic.
//
// Its call sites (server/core/reasoning.go; app keeps the key in the
// store, app/sealkey.go):
//   - plan of a reasoning item, when include asks for
//     "reasoning.encrypted_content": Seal(KindReasoning,
//     ReasoningPayload(itemID, reasoningTokens));
//   - validate, for every reasoning item in a request's input that
//     carries encrypted_content: Open(KindReasoning, blob); an error
//     becomes api.InvalidEncryptedContent(blob), the hosted API's 400;
//   - long sessions' compaction items are to do the same with
//     KindCompaction.
//
// The engine never reads a count out of a blob: the reasoning tokens of a
// turn come from the profile, the effort, the seed and the turn
// (docs/decisions.md). The payload's padding only gives the blob the size
// a real one of that many tokens has.
//
// It imports only the standard library.
package seal
