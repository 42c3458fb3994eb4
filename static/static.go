package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"sync"
)

//go:embed css js img
var files embed.FS

// FS is the embedded assets, rooted so that "css/app.css" names a file.
func FS() fs.FS { return files }

var (
	versionsOnce sync.Once
	versions     map[string]string
)

// URL is the path of an asset under /static/ with a content hash, so that
// browsers may cache it for good and still see every change.
func URL(name string) string {
	versionsOnce.Do(hashAll)
	if v, ok := versions[name]; ok {
		return "/static/" + name + "?v=" + v
	}
	return "/static/" + name
}

// Version is the content hash of an asset, or "" when there is none.
func Version(name string) string {
	versionsOnce.Do(hashAll)
	return versions[name]
}

func hashAll() {
	versions = map[string]string{}
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		versions[p] = hex.EncodeToString(sum[:6])
		return nil
	})
}
