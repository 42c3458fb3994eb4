package inference

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func newTestTokenizer(tb testing.TB) *Tokenizer {
	tb.Helper()
	tok, err := NewTokenizer()
	if err != nil {
		tb.Fatalf("NewTokenizer: %v", err)
	}
	return tok
}

var tokenizerSamples = []string{
	"",
	"hello world",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n",
	"🦀 crab and 🫠🫡 faces",
	"日本語のテキスト",
	"𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math letters ẞ 龘靐",
	"   leading and trailing spaces   \n\n\r\n",
	`{"location":"Paris","unit":"celsius","days":[1,2,3]}`,
	"<|endoftext|> is plain text here",
	"delete \x7f key",
}

func TestTokenizerEncodesO200k(t *testing.T) {
	tok := newTestTokenizer(t)
	// Ids from OpenAI's tiktoken for o200k_base; another encoding gives others.
	if got, want := tok.Encode("hello world"), []int{24912, 2375}; !slices.Equal(got, want) {
		t.Fatalf("Encode(hello world) = %v, want %v", got, want)
	}
}

func TestTokenizerRoundTrip(t *testing.T) {
	tok := newTestTokenizer(t)
	for _, s := range tokenizerSamples {
		ids := tok.Encode(s)
		if got := tok.Decode(ids); got != s {
			t.Errorf("Decode(Encode(%q)) = %q", s, got)
		}
		if n := tok.Count(s); n != len(ids) {
			t.Errorf("Count(%q) = %d, Encode gave %d tokens", s, n, len(ids))
		}
	}
	if got := tok.Decode([]int{24912, -1, 1 << 30, 2375}); got != "hello world" {
		t.Errorf("Decode with unknown ids = %q, want the known ids' text", got)
	}
}

// checkPieces asserts the contract the engine streams by.
func checkPieces(t *testing.T, tok *Tokenizer, s string) []string {
	t.Helper()
	pieces := tok.Pieces(s)
	if got, want := strings.Join(pieces, ""), strings.ToValidUTF8(s, "\uFFFD"); got != want {
		t.Fatalf("Pieces(%q) join to %q", s, got)
	}
	if n := tok.Count(s); len(pieces) != n {
		t.Fatalf("Pieces(%q) has %d pieces, Count is %d", s, len(pieces), n)
	}
	for i, p := range pieces {
		if !utf8.ValidString(p) {
			t.Fatalf("Pieces(%q)[%d] = %q is not valid UTF-8", s, i, p)
		}
	}
	if len(pieces) > 0 && pieces[len(pieces)-1] == "" {
		t.Fatalf("Pieces(%q) ends with an empty piece: text would be lost", s)
	}
	return pieces
}

func TestTokenizerPieces(t *testing.T) {
	tok := newTestTokenizer(t)
	for _, s := range tokenizerSamples {
		checkPieces(t, tok, s)
	}
	// 🦀 is three byte-level tokens: the rune rides on the last of them.
	if got, want := checkPieces(t, tok, "🦀 crab"), []string{"", "", "🦀", " crab"}; !slices.Equal(got, want) {
		t.Fatalf("Pieces(🦀 crab) = %q, want %q", got, want)
	}
	checkPieces(t, tok, "bad \xff\xfe bytes \xe2\x82")
}

func TestTokenizerConcurrentUse(t *testing.T) {
	tok := newTestTokenizer(t)
	want := make([][]int, len(tokenizerSamples))
	for i, s := range tokenizerSamples {
		want[i] = tok.Encode(s)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for w := range 8 {
		wg.Go(func() {
			other := newTestTokenizer(t)
			for r := range 20 {
				i := (w + r) % len(tokenizerSamples)
				if got := other.Encode(tokenizerSamples[i]); !slices.Equal(got, want[i]) {
					errs <- tokenizerSamples[i]
				}
				other.Decode(want[i])
			}
		})
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("concurrent Encode(%q) differed", s)
	}
}

func FuzzPieces(f *testing.F) {
	tok := newTestTokenizer(f)
	for _, s := range tokenizerSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkPieces(t, tok, s)
		valid := strings.ToValidUTF8(s, "\uFFFD")
		if got := tok.Decode(tok.Encode(s)); got != valid {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
	})
}

func BenchmarkTokenizerEncode(b *testing.B) {
	tok := newTestTokenizer(b)
	text := strings.Repeat("The agent reads main.go, runs `go test ./...` and fixes the failing assertion in parser_test.go. ", 40)
	n := tok.Count(text)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Encode(text)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
}

func BenchmarkTokenizerCount(b *testing.B) {
	tok := newTestTokenizer(b)
	text := strings.Repeat("{\"path\":\"src/lib.rs\",\"line\":42,\"message\":\"expected `;`, found `}`\"}\n", 40)
	n := tok.Count(text)
	for b.Loop() {
		tok.Count(text)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
}

func TestTokenizerKeepsDEL(t *testing.T) {
	tok := newTestTokenizer(t)
	if got := tok.Decode([]int{delToken}); got != "\x7f" {
		t.Fatalf("token %d decodes to %q, want DEL", delToken, got)
	}
	for _, s := range []string{"\x7f", "a\x7fb", "x \x7f\x7f. y\x7f"} {
		if got := tok.Decode(tok.Encode(s)); got != s {
			t.Errorf("Decode(Encode(%q)) = %q", s, got)
		}
		checkPieces(t, tok, s)
	}
}

func TestLongTextsTokenizeInChunksToTheSameTokens(t *testing.T) {
	tok, err := NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; b.Len() < 5*chunkBytes; i++ {
		fmt.Fprintf(&b, "func f%d(x int) error { return fmt.Errorf(\"bad %%d\", x) } // naïve café 1 2 3\n\t  if err != nil {{ %d }}", i, i*7919)
	}
	long := b.String()
	ids, _, _ := tok.codec.Encode(long) // the whole text at once
	want := make([]int, len(ids))
	for i, id := range ids {
		want[i] = int(id)
	}
	got := tok.Encode(long)
	if !slices.Equal(got, want) {
		t.Fatalf("chunked: %d tokens, whole: %d", len(got), len(want))
	}
	if n := tok.Count(long); n != len(want) {
		t.Fatalf("Count %d, want %d", n, len(want))
	}
	if p := tok.Pieces(long); len(p) != len(want) || strings.Join(p, "") != long {
		t.Fatalf("Pieces: %d pieces", len(p))
	}
	// A run with no space to cut at still splits, at a rune boundary.
	runes := strings.Repeat("é", chunkBytes)
	if p := tok.Pieces(runes); strings.Join(p, "") != runes {
		t.Fatal("a cut inside a rune run lost text")
	}
	wrapped, err := tok.AppendEncodeWrapped(context.Background(), nil, "<|start|>system<|message|>", long, "<|end|>")
	if err != nil || !slices.Equal(wrapped, tok.Encode("<|start|>system<|message|>"+long+"<|end|>")) {
		t.Fatalf("wrapped: %d tokens, joined: %d", len(wrapped), len(tok.Encode("<|start|>system<|message|>"+long+"<|end|>")))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tok.AppendEncode(ctx, nil, long); err == nil {
		t.Fatal("AppendEncode must stop once its context ends")
	}
}

// TestMatchLenFindsAWrappedTextsTokens is the contract the state's compact
// form keeps an item's text by (server/core/statepack.go): the tokens of
// head+text+end, followed by others, match exactly that many tokens, a
// different text matches none, and AppendDecode gives the bytes back.
func TestMatchLenFindsAWrappedTextsTokens(t *testing.T) {
	tok := newTestTokenizer(t)
	long := strings.Repeat("naïve café 🦀 go ", 9000) // past two chunks: AppendEncodeWrapped cuts it
	for _, s := range append(slices.Clone(tokenizerSamples), long, "Hello", ">x") {
		head, end := "<|start|>user<|message|>", "<|end|>"
		toks, err := tok.AppendEncodeWrapped(context.Background(), nil, head, s, end)
		if err != nil {
			t.Fatal(err)
		}
		all, _ := tok.AppendEncode(context.Background(), slices.Clone(toks), "<|start|>assistant<|message|>next<|end|>")
		if n, ok := tok.MatchLen(all, head, s, end); !ok || n != len(toks) {
			t.Errorf("MatchLen(%.40q) = %d, %v; want %d, true", s, n, ok, len(toks))
		}
		if got := string(tok.AppendDecode(nil, toks)); got != head+s+end {
			t.Errorf("AppendDecode(%.40q) = %.60q", s, got)
		}
		if _, ok := tok.MatchLen(all, head, s+"!", end); ok {
			t.Errorf("MatchLen(%.40q) matched a text one byte longer", s)
		}
		if s != "" {
			if _, ok := tok.MatchLen(all, head, s[:len(s)-1], end); ok {
				t.Errorf("MatchLen(%.40q) matched a text one byte shorter", s)
			}
		}
	}
	if _, ok := tok.MatchLen(nil, "x"); ok {
		t.Error("MatchLen matched text against no tokens")
	}
	if n, ok := tok.MatchLen([]int{24912}, "", ""); !ok || n != 0 {
		t.Errorf("MatchLen of empty texts = %d, %v; want 0, true", n, ok)
	}
}

// FuzzMatchLen: the tokens of any head+text+end match exactly that many
// tokens, followed by others, and decode to the text the tokenizer saw
// (invalid UTF-8 replaced).
func FuzzMatchLen(f *testing.F) {
	for _, s := range tokenizerSamples {
		f.Add("<|start|>user<|message|>", s, "<|end|>")
	}
	f.Add("", "a\xffb", "")
	f.Add(">", "Hello", "")
	tok := newTestTokenizer(f)
	f.Fuzz(func(t *testing.T, head, text, end string) {
		toks, err := tok.AppendEncodeWrapped(context.Background(), nil, head, text, end)
		if err != nil {
			t.Fatal(err)
		}
		seen := validText(head + validText(text) + end)
		if got := string(tok.AppendDecode(nil, toks)); got != seen {
			t.Fatalf("AppendDecode = %q, want %q", got, seen)
		}
		all := append(slices.Clone(toks), tok.Encode("<|end|> more")...)
		if n, ok := tok.MatchLen(all, seen); !ok || n != len(toks) {
			t.Fatalf("MatchLen(%q) = %d, %v; want %d, true", seen, n, ok, len(toks))
		}
		if utf8.ValidString(head) && utf8.ValidString(text) && utf8.ValidString(end) {
			if n, ok := tok.MatchLen(all, head, text, end); !ok || n != len(toks) {
				t.Fatalf("MatchLen(%q, %q, %q) = %d, %v; want %d, true", head, text, end, n, ok, len(toks))
			}
		}
	})
}
