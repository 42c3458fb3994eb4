// Package request reads what both transports need from an HTTP request
// before its body: who sent it, its client-session key, the modelled stack
// it chose, and whether it asks to open a WebSocket. The core never sees
// an *http.Request; the transports hand it what these return.
package request
