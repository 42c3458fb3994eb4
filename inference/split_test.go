package inference

import (
	"slices"
	"strings"
	"testing"
)

// codecTokens is what the codec alone makes of text.
func codecTokens(tok *Tokenizer, text string) []int {
	var out []int
	ids, _, _ := tok.codec.Encode(text)
	for _, id := range ids {
		out = append(out, int(id))
	}
	return out
}

// asciiSamples hold each alternative of the split pattern and the joints
// between them.
var asciiSamples = []string{
	"", "a", "Hello World", "HELLO world", "HTTPServer", "don't I'LL we've they'Re it'd 'S x'", "can'", "x'l",
	"  two spaces", "trailing   ", "a  \n\n  b", "\r\n\r\n", " \t\n x", "\tindented", "x\t\ty", "12345 6", "v1.2.3",
	"(paren) {brace}", " +-*/ x", "a//b\n/", "!!\r\n/x", "\x00\x01\x1c\x1f\x7e", "a\vb\fc", " 'quote'", "x  ,y",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n", "<|start|>user<|message|>", "  \n", " \n ", "\n \n x",
	"ABC", "ABc", "aBC", ".Hello", ".HELLO", "=ABC'S", " 12", "_id", "x_y", "$HOME", "a's'll",
}

func TestASCIIPiecesMatchTheCodec(t *testing.T) {
	tok, err := NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	texts := slices.Clone(asciiSamples)
	for b := range 0x7f { // every byte but DEL (segments cuts it out), between letters and between spaces
		texts = append(texts, "a"+string(rune(b))+"b", " "+string(rune(b))+" ", string(rune(b))+"x", "X"+string(rune(b)))
	}
	texts = append(texts, strings.Join(asciiSamples, ""), strings.Join(asciiSamples, " "))
	for _, text := range texts {
		if got, want := tok.appendASCII(nil, text), codecTokens(tok, text); !slices.Equal(got, want) {
			t.Errorf("%q: %v, the codec %v", text, got, want)
		}
		var joined strings.Builder
		asciiPieces(text, func(p string) { joined.WriteString(p) })
		if joined.String() != text {
			t.Errorf("%q: the pieces join to %q", text, joined.String())
		}
	}
}

func FuzzASCIIPieces(f *testing.F) {
	for _, s := range asciiSamples {
		f.Add(s)
	}
	tok, err := NewTokenizer()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !isASCII(text) || strings.IndexByte(text, 0x7f) >= 0 { // segments cuts DEL out
			return
		}
		if got, want := tok.appendASCII(nil, text), codecTokens(tok, text); !slices.Equal(got, want) {
			t.Errorf("%q: %v, the codec %v", text, got, want)
		}
	})
}

// codecAppend is AppendEncode as it was before appendMixed: the codec on
// every segment.
func codecAppend(tok *Tokenizer, text string) []int {
	var out []int
	segments(validText(text), func(seg string, del bool) bool {
		if del {
			out = append(out, delToken)
			return true
		}
		out = append(out, codecTokens(tok, seg)...)
		return true
	})
	return out
}

// mixedSamples put non-ASCII text (letters, marks, digits, spaces and
// symbols the pattern classes apart) next to ASCII.
var mixedSamples = []string{
	"café au lait", "naïve façade", "x → y", "a\u00a0b", "a \u00a0 b", " \u00a0x y", "über Über ÜBER", "e\u0301 x",
	"数字 ١٢٣ x", "x ² y", "don’t stop", "a\u2028b c", "— dash — x", "emoji 🙂 ok", "ſ's x", "Straße's 'S",
	"tab\t→\tx", "x \u0085 y", "A\u00c0b c",
}

func TestAppendEncodeMatchesTheCodecOnMixedText(t *testing.T) {
	tok, err := NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	texts := slices.Clone(mixedSamples)
	texts = append(texts, strings.Join(mixedSamples, " "), strings.Join(mixedSamples, ""), strings.Join(append(asciiSamples, mixedSamples...), " x "))
	for _, text := range texts {
		if got, want := tok.Encode(text), codecAppend(tok, text); !slices.Equal(got, want) {
			t.Errorf("%q: %v, the codec %v", text, got, want)
		}
	}
}

func FuzzAppendEncodeMixed(f *testing.F) {
	for _, s := range append(slices.Clone(asciiSamples), mixedSamples...) {
		f.Add(s)
	}
	tok, err := NewTokenizer()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := tok.Encode(text), codecAppend(tok, text); !slices.Equal(got, want) {
			t.Errorf("%q: %v, the codec %v", text, got, want)
		}
	})
}
