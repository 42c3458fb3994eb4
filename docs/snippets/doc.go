// Package snippets holds the client snippets the README and the /docs page
// both show, so they cannot drift apart: /docs embeds these files (with
// the server's own address and key in place of the defaults below), and a
// test checks the README contains each one verbatim.
//
// The files are written for the default address, http://127.0.0.1:8080,
// and the key sk-local (any key works unless the server has --api-key).
package snippets

import (
	"embed"
	"strings"
)

//go:embed *.py *.toml *.sh
var files embed.FS

// The address and key the files are written for.
const (
	DefaultBase = "http://127.0.0.1:8080"
	DefaultWS   = "ws://127.0.0.1:8080"
	DefaultKey  = "sk-local"
)

// Names are the snippet files, in the order the README shows them.
var Names = []string{"python.py", "codex.toml", "curl.sh", "websocat.sh"}

// Raw is a snippet as written, for the default address and key.
func Raw(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("snippets: " + err.Error()) // a name not in Names: a programming error
	}
	return strings.TrimRight(string(b), "\n")
}

// For is a snippet with a server's own addresses and key in place of the
// defaults: base like "http://host:port", ws like "ws://host:port".
func For(name, base, ws, key string) string {
	return strings.NewReplacer(DefaultBase, base, DefaultWS, ws, DefaultKey, key).Replace(Raw(name))
}
