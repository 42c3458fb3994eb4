package api

import (
	"crypto/rand"
	"encoding/hex"
)

// NewID returns prefix + "_" + 48 hex characters, the shape of real ids
// (resp_, msg_, fc_, rs_).
func NewID(prefix string) string {
	var raw [24]byte
	_, _ = rand.Read(raw[:])
	b := make([]byte, 0, len(prefix)+1+48)
	b = append(b, prefix...)
	b = append(b, '_')
	return string(hex.AppendEncode(b, raw[:]))
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// NewCallID returns "call_" + 24 alphanumerics.
func NewCallID() string {
	var raw [24]byte
	_, _ = rand.Read(raw[:])
	b := make([]byte, 0, 29)
	b = append(b, "call_"...)
	for _, c := range raw {
		b = append(b, alnum[int(c)%len(alnum)])
	}
	return string(b)
}
