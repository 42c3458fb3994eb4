package inference

import (
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

// each calls yield for every token of text, in order.
func (t *Tokenizer) each(text string, yield func(id uint, tok string)) {
	text = validText(text)
	for {
		i := strings.IndexByte(text, 0x7f)
		seg := text
		if i >= 0 {
			seg = text[:i]
		}
		if seg != "" {
			ids, toks, _ := t.codec.Encode(seg) // errors only in strict mode, which is never set
			for k, id := range ids {
				yield(id, toks[k])
			}
		}
		if i < 0 {
			return
		}
		yield(delToken, del)
		text = text[i+1:]
	}
}

// Encode returns the token ids of text.
func (t *Tokenizer) Encode(text string) []int {
	if strings.IndexByte(text, 0x7f) < 0 {
		ids, _, _ := t.codec.Encode(validText(text))
		out := make([]int, len(ids))
		for i, id := range ids {
			out[i] = int(id)
		}
		return out
	}
	var out []int
	t.each(text, func(id uint, _ string) { out = append(out, int(id)) })
	return out
}

// Count returns the number of tokens in text without keeping them.
func (t *Tokenizer) Count(text string) int {
	if strings.IndexByte(text, 0x7f) < 0 {
		n, _ := t.codec.Count(validText(text))
		return n
	}
	n := 0
	t.each(text, func(uint, string) { n++ })
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
