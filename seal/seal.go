package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Kinds of blob. A blob opens only as the kind it was sealed as.
const (
	KindReasoning  = "reasoning"
	KindCompaction = "compaction"
)

// Version is the first byte of every blob: the layout
// version ‖ nonce ‖ AES-256-GCM(payload) with tag. A blob of another
// version does not open.
const Version byte = 1

const (
	nonceLen = 12 // GCM's standard nonce
	tagLen   = 16 // GCM's tag
	// Overhead is what sealing adds to a payload before base64.
	Overhead = 1 + nonceLen + tagLen
)

// KeyLen is an AES-256 key's length in bytes.
const KeyLen = 32

// Key is a sealing key.
type Key [KeyLen]byte

// NewKey returns a random key.
func NewKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k[:]); err != nil {
		return Key{}, fmt.Errorf("seal: no random key: %w", err)
	}
	return k, nil
}

// String is the key's text form, standard base64: what --seal-key takes.
func (k Key) String() string { return base64.StdEncoding.EncodeToString(k[:]) }

// ParseKey reads a key written as base64 (standard or URL-safe, padded or
// not) or as 64 hexadecimal digits.
func ParseKey(s string) (Key, error) {
	s = strings.TrimSpace(s)
	var k Key
	if len(s) == 2*KeyLen {
		if b, err := hex.DecodeString(s); err == nil {
			copy(k[:], b)
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeyLen {
				return Key{}, fmt.Errorf("seal: a key is %d bytes, this one is %d", KeyLen, len(b))
			}
			copy(k[:], b)
			return k, nil
		}
	}
	return Key{}, errors.New("seal: a key is 32 bytes written as base64 or 64 hexadecimal digits")
}

// Sealer seals and opens blobs under one key. It is safe for concurrent
// use.
type Sealer struct {
	aead cipher.AEAD
}

// New returns a Sealer for k.
func New(k Key) *Sealer {
	block, err := aes.NewCipher(k[:])
	if err != nil {
		panic("seal: " + err.Error()) // a 32-byte key always makes a cipher
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic("seal: " + err.Error())
	}
	return &Sealer{aead: aead}
}

// ErrInvalid is what Open returns for any blob that does not open: not
// base64, too short, another version, another key, another kind, or
// changed. It says no more, on purpose.
var ErrInvalid = errors.New("seal: the blob could not be decrypted or parsed")

// Seal returns payload sealed as kind, in base64.
func (s *Sealer) Seal(kind string, payload []byte) string {
	buf := make([]byte, 1+nonceLen, Overhead+len(payload))
	buf[0] = Version
	if _, err := rand.Read(buf[1:]); err != nil {
		panic("seal: no random nonce: " + err.Error()) // crypto/rand does not fail on Linux
	}
	buf = s.aead.Seal(buf, buf[1:1+nonceLen], payload, additional(kind))
	return base64.StdEncoding.EncodeToString(buf)
}

// Open returns the payload of a blob sealed as kind, or ErrInvalid.
func (s *Sealer) Open(kind, blob string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(blob)
	if err != nil || len(raw) < Overhead || raw[0] != Version {
		return nil, ErrInvalid
	}
	out, err := s.aead.Open(nil, raw[1:1+nonceLen], raw[1+nonceLen:], additional(kind))
	if err != nil {
		return nil, ErrInvalid
	}
	return out, nil
}

// additional is the data bound to a blob besides its payload: the
// version and the kind, so a reasoning blob cannot pass as a compaction one.
func additional(kind string) []byte {
	return append([]byte{Version}, kind...)
}
