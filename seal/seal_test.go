package seal

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func testSealer(t testing.TB, fill byte) *Sealer {
	t.Helper()
	var k Key
	for i := range k {
		k[i] = fill
	}
	return New(k)
}

func TestSealOpensAsItsKindOnly(t *testing.T) {
	s := testSealer(t, 1)
	other := testSealer(t, 2)
	payload := []byte("the model's thoughts")
	blob := s.Seal(KindReasoning, payload)
	flip := func(i int) string {
		raw, _ := base64.StdEncoding.DecodeString(blob)
		raw[i] ^= 0x01
		return base64.StdEncoding.EncodeToString(raw)
	}
	raw, _ := base64.StdEncoding.DecodeString(blob)
	cases := []struct {
		name       string
		sealer     *Sealer
		kind, blob string
		ok         bool
	}{
		{"its kind", s, KindReasoning, blob, true},
		{"another kind", s, KindCompaction, blob, false},
		{"another key", other, KindReasoning, blob, false},
		{"version changed", s, KindReasoning, flip(0), false},
		{"nonce changed", s, KindReasoning, flip(1), false},
		{"ciphertext changed", s, KindReasoning, flip(Overhead - tagLen + 2), false},
		{"tag changed", s, KindReasoning, flip(len(raw) - 1), false},
		{"cut short", s, KindReasoning, base64.StdEncoding.EncodeToString(raw[:len(raw)-1]), false},
		{"shorter than the overhead", s, KindReasoning, base64.StdEncoding.EncodeToString(raw[:Overhead-1]), false},
		{"not base64", s, KindReasoning, "gAAA...DQ==", false},
		{"empty", s, KindReasoning, "", false},
		{"URL-safe base64 of the same bytes", s, KindReasoning, base64.URLEncoding.EncodeToString(raw), strings.IndexAny(blob, "+/") < 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.sealer.Open(c.kind, c.blob)
			if c.ok {
				if err != nil || !bytes.Equal(got, payload) {
					t.Fatalf("Open = %q, %v; want the payload", got, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || got != nil {
				t.Fatalf("Open = %q, %v; want ErrInvalid", got, err)
			}
		})
	}
}

func TestSealUsesAFreshNonce(t *testing.T) {
	s := testSealer(t, 3)
	a, b := s.Seal(KindReasoning, []byte("x")), s.Seal(KindReasoning, []byte("x"))
	if a == b {
		t.Fatal("two seals of the same payload are equal: the nonce is not random")
	}
	if raw, _ := base64.StdEncoding.DecodeString(a); raw[0] != Version {
		t.Fatalf("first byte %d, want the version %d", raw[0], Version)
	}
}

func TestBlobLenIsTheSealedLength(t *testing.T) {
	s := testSealer(t, 4)
	for _, tokens := range []int{0, 1, 2, 3, 100, 1234, -5} {
		blob := s.Seal(KindReasoning, ReasoningPayload("resp_123", tokens))
		if len(blob) != BlobLen(tokens) {
			t.Errorf("%d tokens: blob of %d bytes, BlobLen says %d", tokens, len(blob), BlobLen(tokens))
		}
	}
	// The per-token slope is BytesPerReasoningToken × 4/3.
	if d := BlobLen(3000) - BlobLen(0); d != 3000*BytesPerReasoningToken*4/3 {
		t.Errorf("3000 tokens add %d bytes, want %d", d, 3000*BytesPerReasoningToken*4/3)
	}
	p := ReasoningPayload(strings.Repeat("h", 40), 2)
	if len(p) != HeaderLen+2*BytesPerReasoningToken || string(p[:HeaderLen]) != strings.Repeat("h", HeaderLen) {
		t.Errorf("payload %q: the header is not cut to HeaderLen", p)
	}
}

func TestParseKey(t *testing.T) {
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if k == (Key{}) {
		t.Fatal("NewKey returned the zero key")
	}
	cases := []struct {
		name, text string
		ok         bool
	}{
		{"String", k.String(), true},
		{"raw base64", base64.RawStdEncoding.EncodeToString(k[:]), true},
		{"URL-safe base64", base64.URLEncoding.EncodeToString(k[:]), true},
		{"hex", hex.EncodeToString(k[:]), true},
		{"with spaces", "  " + k.String() + "\n", true},
		{"16 bytes", base64.StdEncoding.EncodeToString(k[:16]), false},
		{"empty", "", false},
		{"words", "not a key", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseKey(c.text)
			switch {
			case c.ok && (err != nil || got != k):
				t.Fatalf("ParseKey = %v, %v; want the key", got, err)
			case !c.ok && err == nil:
				t.Fatalf("ParseKey(%q) accepted it", c.text)
			}
		})
	}
}

// FuzzOpen: no input makes Open panic, and nothing but a sealed blob opens.
func FuzzOpen(f *testing.F) {
	s := testSealer(f, 5)
	f.Add(KindReasoning, s.Seal(KindReasoning, []byte("seed")))
	f.Add(KindCompaction, s.Seal(KindReasoning, nil))
	f.Add(KindReasoning, "AQ==")
	f.Add(KindReasoning, "gAAAAABn")
	f.Fuzz(func(t *testing.T, kind, blob string) {
		payload, err := s.Open(kind, blob)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || payload != nil {
				t.Fatalf("Open error %v with payload %q", err, payload)
			}
			return
		}
		// It opened: it must be one of the seeds, sealed as this kind.
		if kind != KindReasoning {
			t.Fatalf("a blob opened as %q", kind)
		}
	})
}
