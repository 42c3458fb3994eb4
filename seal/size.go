package seal

import "encoding/base64"

// BytesPerReasoningToken is the sealed payload's size per reasoning token:
// a derived parameter (docs/stack.md, "Derived parameters outside the
// stack"). A reasoning item's blob carries what the model thought so that
// the next turn can resume it; the densest faithful record of a token is
// its id, and o200k's 200,019 ids need 18 bits, so 4 bytes (a 32-bit
// integer) per token. The same 4 bytes are o200k's average text per token
// in English prose, so a blob of the tokens' text would be the same size.
// After sealing and base64 a reasoning token costs 4 × 4⁄3 ≈ 5.33 bytes of
// encrypted_content, plus a fixed (HeaderLen + Overhead) × 4⁄3 bytes.
const BytesPerReasoningToken = 4

// HeaderLen is the fixed part of a reasoning payload that ReasoningPayload
// copies from its header (shorter headers are padded, longer cut).
const HeaderLen = 32

// ReasoningPayload is the payload of a reasoning blob for tokens reasoning
// tokens: header (the engine's own record, such as the response id, padded
// or cut to HeaderLen bytes) followed by BytesPerReasoningToken bytes per
// token. The bytes after the header are zero: the engine never reads a
// count or anything else out of them.
func ReasoningPayload(header string, tokens int) []byte {
	p := make([]byte, HeaderLen+BytesPerReasoningToken*max(tokens, 0))
	copy(p[:HeaderLen], header)
	return p
}

// BlobLen is the length of encrypted_content for a reasoning item of
// tokens reasoning tokens: base64 of version, nonce, tag and
// ReasoningPayload.
func BlobLen(tokens int) int {
	return base64.StdEncoding.EncodedLen(Overhead + HeaderLen + BytesPerReasoningToken*max(tokens, 0))
}
