package app

import "testing"

func TestLoginCookieName(t *testing.T) {
	for _, tc := range []struct {
		host string
		tls  bool
		want string
	}{
		{"127.0.0.1:8080", false, "agentloop_session_8080"},
		{"localhost:9000", true, "agentloop_session_9000"},
		{"[::1]:8443", true, "agentloop_session_8443"},
		{"agentloop.internal", false, "agentloop_session_80"},
		{"agentloop.internal", true, "agentloop_session_443"},
		// Never a name a browser cannot store: a bad port is the scheme's.
		{"localhost:8080;x", false, "agentloop_session_80"},
		{"localhost:0080", false, "agentloop_session_80"},
	} {
		if got := LoginCookieName(tc.host, tc.tls); got != tc.want {
			t.Errorf("%q tls=%v: %q, want %q", tc.host, tc.tls, got, tc.want)
		}
	}
}
