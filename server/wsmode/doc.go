// Package wsmode is WebSocket mode (docs/protocol.md, "WebSocket mode"):
// GET /responses upgraded, one reader per connection that queues creates
// on their lanes (lanes.go), each lane running its creates one at a time
// through the core, the connection's batched socket writer (wsbatch.go),
// the message rules (wsmessages.go), the engine's registry of open
// connections with its stall watchdog (conns.go), a connection's limit
// (limit.go) and steering its responses in flight (steer.go). A lane is
// the core's Conn and its sink; its latest response is kept packed and
// held in the process's state budget (lanes.go, remember), which may drop
// it while it is idle.
package wsmode
