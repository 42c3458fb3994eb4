package inference

import (
	"context"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// sharedCodec is built once per process: loading the o200k vocabulary costs
// hundreds of milliseconds and tens of megabytes. The codec is safe for
// concurrent use: its vocabulary is read-only after construction, its split
// regexp (regexp2) is documented safe for concurrent use, Decode builds its
// reverse table under a sync.Once, and nobody changes its error mode.
var sharedCodec struct {
	once  sync.Once
	codec tokenizer.Codec
	err   error
}

// Tokenizer counts, splits and decodes text with the o200k_base encoding.
// It is safe for concurrent use.
type Tokenizer struct {
	codec tokenizer.Codec
}

// NewTokenizer returns a tokenizer sharing the process-wide o200k_base codec.
func NewTokenizer() (*Tokenizer, error) {
	sharedCodec.once.Do(func() {
		sharedCodec.codec, sharedCodec.err = tokenizer.Get(tokenizer.O200kBase)
	})
	if sharedCodec.err != nil {
		return nil, sharedCodec.err
	}
	return &Tokenizer{codec: sharedCodec.codec}, nil
}

// validText replaces invalid UTF-8 with U+FFFD. The split regexp works on runes
// and would silently do the same, so doing it first keeps Pieces'
// concatenation equal to the text that was actually tokenized.
func validText(text string) string {
	if utf8.ValidString(text) {
		return text
	}
	return strings.ToValidUTF8(text, "\uFFFD")
}

// delToken is o200k_base's id for the byte 0x7f (DEL). The codec's generated
// split regexp drops DEL from its input (the only character it loses), so the
// tokenizer cuts the text at DEL and emits this token itself. Next to
// punctuation tiktoken would merge DEL into the punctuation's chunk; counts
// may differ there by a token, which is harmless for a control character.
const (
	delToken = 221
	del      = "\x7f"
)

// chunkBytes bounds the text the split regexp sees at once. regexp2 holds
// its input as runes and allocates per match, so a whole 30 MiB string cost
// gigabytes; chunks keep a request's tokenizing memory a small multiple of
// its size, and give a long text places to stop when its request ends.
const chunkBytes = 32 << 10

// segments calls yield for each piece of text the codec encodes on its
// own, in order: text is cut at DEL (see delToken), and long runs are cut
// before a space that follows a non-space and precedes one, where the split
// regexp starts a new chunk anyway (" word"), so tokens do not change. A run
// with no such place is cut at a rune boundary. yield returns false to stop.
func segments(text string, yield func(seg string, del bool) bool) {
	for text != "" {
		seg, rest, cutAtDel := text, "", false
		if i := strings.IndexByte(text, 0x7f); i >= 0 {
			seg, rest, cutAtDel = text[:i], text[i+1:], true
		}
		for len(seg) > chunkBytes {
			cut := splitPoint(seg[:chunkBytes])
			if !yield(seg[:cut], false) {
				return
			}
			seg = seg[cut:]
		}
		if seg != "" && !yield(seg, false) {
			return
		}
		if cutAtDel && !yield(del, true) {
			return
		}
		text = rest
	}
}

// splitPoint is where to cut a chunk: before its last " x" that follows a
// non-space, or failing that at its last rune boundary.
func splitPoint(s string) int {
	for i := len(s) - 2; i > 0; i-- {
		if s[i] == ' ' && !isSpace(s[i-1]) && !isSpace(s[i+1]) {
			return i
		}
	}
	for i := len(s) - 1; i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return len(s)
}

func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

// each calls yield for every token of text, in order.
func (t *Tokenizer) each(text string, yield func(id uint, tok string)) {
	segments(validText(text), func(seg string, del bool) bool {
		if del {
			yield(delToken, seg)
			return true
		}
		ids, toks, _ := t.codec.Encode(seg) // errors only in strict mode, which is never set
		for k, id := range ids {
			yield(id, toks[k])
		}
		return true
	})
}

// Encode returns the token ids of text.
func (t *Tokenizer) Encode(text string) []int {
	out, _ := t.AppendEncode(context.Background(), nil, text)
	return out
}

// AppendEncode appends the token ids of text to dst. It stops between
// chunks once ctx ends, returning ctx's error.
func (t *Tokenizer) AppendEncode(ctx context.Context, dst []int, text string) ([]int, error) {
	if need := len(text) / 3; cap(dst)-len(dst) < need && len(text) > chunkBytes {
		// One allocation instead of doubling through a long text: o200k
		// averages over four bytes a token on prose and code.
		dst = slices.Grow(dst, need)
	}
	var err error
	segments(validText(text), func(seg string, del bool) bool {
		if err = ctx.Err(); err != nil {
			return false
		}
		if del {
			dst = append(dst, delToken)
			return true
		}
		ids, _, _ := t.codec.Encode(seg)
		for _, id := range ids {
			dst = append(dst, int(id))
		}
		return true
	})
	return dst, err
}

// AppendEncodeWrapped appends the tokens of prefix+text+suffix, as
// AppendEncode would, without building the joined string: a long text is
// cut where the split regexp starts a new chunk anyway, so only its first
// and last chunks are joined to the short prefix and suffix.
func (t *Tokenizer) AppendEncodeWrapped(ctx context.Context, dst []int, prefix, text, suffix string) ([]int, error) {
	text = validText(text)
	if len(text) <= 2*chunkBytes || strings.IndexByte(text, 0x7f) >= 0 {
		return t.AppendEncode(ctx, dst, prefix+text+suffix)
	}
	head := splitPoint(text[:chunkBytes])
	tail := len(text) - chunkBytes + splitPoint(text[len(text)-chunkBytes:])
	if head >= tail {
		return t.AppendEncode(ctx, dst, prefix+text+suffix)
	}
	var err error
	if dst, err = t.AppendEncode(ctx, dst, prefix+text[:head]); err != nil {
		return dst, err
	}
	if dst, err = t.AppendEncode(ctx, dst, text[head:tail]); err != nil {
		return dst, err
	}
	return t.AppendEncode(ctx, dst, text[tail:]+suffix)
}

// Count returns the number of tokens in text without keeping them.
func (t *Tokenizer) Count(text string) int {
	n := 0
	segments(validText(text), func(seg string, del bool) bool {
		if del {
			n++
			return true
		}
		c, _ := t.codec.Count(seg)
		n += c
		return true
	})
	return n
}

// Decode returns the text of tokens. Ids outside the vocabulary are skipped.
func (t *Tokenizer) Decode(tokens []int) string {
	ids := make([]uint, 0, len(tokens))
	for _, id := range tokens {
		if id >= 0 {
			ids = append(ids, uint(id))
		}
	}
	if s, err := t.codec.Decode(ids); err == nil {
		return s
	}
	// Rare path: some id is unknown. Decode one by one and drop the bad ones.
	var sb strings.Builder
	one := make([]uint, 1)
	for _, id := range ids {
		one[0] = id
		if s, err := t.codec.Decode(one); err == nil {
			sb.WriteString(s)
		}
	}
	return sb.String()
}

// Pieces splits text into one string per token, so that the engine can
// stream one piece per released token: len(Pieces(s)) == Count(s), and the
// pieces concatenate to s exactly (after invalid UTF-8 became U+FFFD).
//
// Byte-level BPE can cut a multi-byte rune between tokens. Every piece must be
// valid UTF-8 on the wire, so such a group of tokens is merged: the whole rune
// run is carried by the group's last token and the earlier tokens of the group
// get "". Consumers skip empty deltas; the token count stays exact.
func (t *Tokenizer) Pieces(text string) []string {
	text = validText(text)
	var pieces []string
	start, off := 0, 0 // byte offsets in text: start of the pending group, end of the last token
	t.each(text, func(_ uint, tok string) {
		off += len(tok)
		piece := ""
		if utf8.ValidString(text[start:off]) {
			piece = text[start:off]
			start = off
		}
		pieces = append(pieces, piece)
	})
	if start < len(text) && len(pieces) > 0 {
		// Unreachable for valid input; keep the concatenation exact regardless.
		pieces[len(pieces)-1] += text[start:]
	}
	return pieces
}

// pieceTable is every token id's bytes, built once in the process on first
// use (about 5 MB with the codec's own reverse table, which building it
// makes): the state's compact form matches and decodes text against
// tokens with it, a table lookup a token.
type pieceTable struct {
	text string   // the pieces, one after the other, by id
	ends []uint32 // ends[id] is where id's piece ends in text
}

var pieces struct {
	once  sync.Once
	table pieceTable
}

// table is the process's piece table.
func (t *Tokenizer) table() *pieceTable {
	pieces.once.Do(func() {
		var text strings.Builder
		var ends []uint32
		one := make([]uint, 1)
		misses := 0
		for id := 0; misses < 1024; id++ { // o200k's ids are dense below its size
			one[0] = uint(id)
			s, err := t.codec.Decode(one)
			if err != nil {
				misses++
				s = ""
			} else {
				misses = 0
			}
			text.WriteString(s)
			ends = append(ends, uint32(text.Len()))
		}
		pieces.table = pieceTable{text: text.String(), ends: ends}
	})
	return &pieces.table
}

// piece is the bytes token id stands for; "" for an id outside the
// vocabulary (o200k's special tokens included: the engine never emits them).
func (p *pieceTable) piece(id int) string {
	if id < 0 || id >= len(p.ends) {
		return ""
	}
	start := uint32(0)
	if id > 0 {
		start = p.ends[id-1]
	}
	return p.text[start:p.ends[id]]
}

// MatchLen is how many of tokens' leading tokens decode to exactly the
// concatenation of texts, byte for byte (a token may straddle two texts,
// and a multi-byte rune two tokens); ok is false when no leading run does.
// It reads the tokens, never encodes.
func (t *Tokenizer) MatchLen(tokens []int, texts ...string) (n int, ok bool) {
	table := t.table()
	ti, rest := 0, ""     // rest: what is left of texts[ti-1], the text being matched
	next := func() bool { // moves rest to the next text with bytes left
		for rest == "" && ti < len(texts) {
			rest, ti = texts[ti], ti+1
		}
		return rest != ""
	}
	for next() {
		if n == len(tokens) {
			return 0, false
		}
		p := table.piece(tokens[n])
		if p == "" {
			return 0, false
		}
		n++
		for p != "" {
			if !next() {
				return 0, false
			}
			k := min(len(p), len(rest))
			if p[:k] != rest[:k] {
				return 0, false
			}
			p, rest = p[k:], rest[k:]
		}
	}
	return n, true
}

// AppendDecode appends the bytes of tokens to dst: Decode without its
// string, through the same table as MatchLen. An id outside the vocabulary
// adds nothing.
func (t *Tokenizer) AppendDecode(dst []byte, tokens []int) []byte {
	table := t.table()
	n := 0
	for _, id := range tokens {
		n += len(table.piece(id))
	}
	dst = slices.Grow(dst, n)
	for _, id := range tokens {
		dst = append(dst, table.piece(id)...)
	}
	return dst
}
