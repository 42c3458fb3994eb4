package web

import "testing"

func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                  true,
		"Application/JSON":                  true,
		"application/json; charset=utf-8":   true,
		" application/json ;charset=UTF-8":  true,
		"application/json;":                 true,
		"":                                  false,
		"text/plain":                        false,
		"text/plain; charset=utf-8":         false,
		"application/x-www-form-urlencoded": false,
		"multipart/form-data; boundary=x":   false,
		"application/jsonp":                 false,
		"application/json-seq":              false,
		"application/vnd.api+json":          false,
		"application/json, text/plain":      false,
	} {
		if got := IsJSON(ct); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}
