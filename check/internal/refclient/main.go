// Command refclient is the report card's reference client (package
// check): a small agent loop over the Responses API that reads
// OPENAI_BASE_URL and OPENAI_API_KEY, offers one function tool, and runs
// it until the model answers. By default it does each thing the gauntlet
// checks right; -mistakes makes the field's mistakes instead, those it
// lists (comma-separated) or all:
//
//   - resend: a WebSocket continuation resends the whole history;
//   - flat-errors: it reads only the flat error shape
//     ({"type":"error","code":…}), so a wrapped frame's nested error.code
//     is lost, and it retries the same request blindly, twice, before it
//     starts a new chain;
//   - replay: after a broken connection or stream it replays the request
//     whose output started (same previous_response_id), and gives up
//     after three;
//   - no-backoff: it retries a 429 at once, whatever the hint;
//   - no-fallback: it keeps retrying a refused upgrade instead of falling
//     back to HTTP;
//   - chain-unstored: over HTTP it chains to responses it created with
//     store:false;
//   - stale-parent: once, its "last response id" lags a turn behind, so a
//     continuation names the response before the newest (an older branch).
//
// It makes no one-response-in-flight mistake: against an engine this
// fast, a continuation sent before the terminal event is read still
// arrives after the response ended, so the engine cannot see it
// (check's grade_test.go tests that grading on traces instead).
//
// -transport picks ws (WebSocket, falling back to HTTP when the upgrade
// is refused) or http. The tests of package check build and grade it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
)

func main() {
	mistakes := flag.String("mistakes", "", "the field's mistakes to make, comma-separated, or all: resend, flat-errors, replay, no-backoff, no-fallback, chain-unstored, stale-parent")
	transport := flag.String("transport", "ws", "ws (falls back to http when the upgrade is refused) or http")
	toolTime := flag.Duration("tool-time", 0, "how long the tool takes per call")
	noTools := flag.Bool("no-tools", false, "offer no tool: the model answers at once")
	flag.Parse()
	var b [6]byte
	_, _ = rand.Read(b[:])
	c := &client{base: strings.TrimRight(os.Getenv("OPENAI_BASE_URL"), "/"), key: os.Getenv("OPENAI_API_KEY"),
		mistakes: mistakeSet(*mistakes), http: *transport == "http", toolTime: *toolTime, cacheKey: "refclient-" + hex.EncodeToString(b[:]), noTools: *noTools}
	c.history = []json.RawMessage{json.RawMessage(`{"role":"user","content":"List the files in the repository, then summarize them."}`)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "refclient:", err)
		os.Exit(1)
	}
}

// allMistakes are the mistakes -mistakes all makes.
var allMistakes = []string{"resend", "flat-errors", "replay", "no-backoff", "no-fallback", "chain-unstored", "stale-parent"}

func mistakeSet(list string) map[string]bool {
	set := map[string]bool{}
	for _, m := range strings.Split(list, ",") {
		switch m = strings.TrimSpace(m); m {
		case "":
		case "all":
			for _, a := range allMistakes {
				set[a] = true
			}
		default:
			if !slices.Contains(allMistakes, m) {
				fmt.Fprintf(os.Stderr, "refclient: unknown mistake %q\n", m)
				os.Exit(2)
			}
			set[m] = true
		}
	}
	return set
}

const tools = `[{"type":"function","name":"list_files","description":"Lists the files of a directory","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]`

type client struct {
	base, key, cacheKey string
	mistakes            map[string]bool
	http, noTools       bool
	toolTime            time.Duration

	history []json.RawMessage // the whole conversation
	pending []json.RawMessage // the items since prev
	prev    string
	older   string // the response before prev (for the stale-parent mistake)
	staled  bool   // the stale-parent mistake was made (once)
	ws      *websocket.Conn
	retries int // the mistakes' blind retries
}

// outcome is how one request ended.
type outcome struct {
	respID  string
	output  []json.RawMessage
	failed  bool   // the server answered with an error
	code    string // the error's code, as this client reads it
	retryMS int    // the hint of a 429 or 503
	broken  bool   // the connection or stream ended without a terminal event
}

func (c *client) run(ctx context.Context) error {
	for turn := 0; turn < 500; turn++ {
		o, err := c.send(ctx)
		if err != nil {
			return err
		}
		if err := c.handle(ctx, o); err != nil {
			return err
		}
		if o.respID != "" && !o.failed && !o.broken {
			done := c.took(o)
			if done {
				return nil
			}
		}
	}
	return errors.New("too many turns")
}

// took adds a response's output to the conversation and runs its calls;
// true when the model answered.
func (c *client) took(o outcome) bool {
	c.history = append(c.history, o.output...)
	c.pending = nil
	c.older, c.prev = c.prev, o.respID
	calls := 0
	for _, it := range o.output {
		var item struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		}
		_ = json.Unmarshal(it, &item)
		if item.Type != "function_call" {
			continue
		}
		calls++
		time.Sleep(c.toolTime)
		out, _ := json.Marshal(map[string]string{"type": "function_call_output", "call_id": item.CallID, "output": "main.go\nREADME.md\ngo.mod"})
		c.history = append(c.history, out)
		c.pending = append(c.pending, out)
	}
	return calls == 0
}

// handle acts on an error or a broken connection.
func (c *client) handle(ctx context.Context, o outcome) error {
	switch {
	case o.broken && c.mistakes["replay"]:
		c.retries++
		if c.retries > 3 {
			return errors.New("the connection broke; giving up")
		}
		c.closeWS()
		return nil // replays the same request, same previous_response_id
	case o.broken:
		c.closeWS()
		c.newChain()
	case !o.failed:
		return nil
	case o.code == "rate_limit_exceeded" || o.code == "server_error":
		wait := time.Duration(o.retryMS) * time.Millisecond
		if c.mistakes["no-backoff"] {
			wait = 100 * time.Millisecond
		}
		time.Sleep(wait)
	case c.mistakes["flat-errors"] && o.code == "":
		// The same request again, blindly, then a new chain.
		c.retries++
		if c.retries > 2 {
			c.retries = 0
			c.newChain()
		}
	case o.code == "previous_response_not_found":
		c.newChain()
	case o.code == "websocket_connection_limit_reached":
		c.closeWS()
		c.newChain()
	default:
		return fmt.Errorf("error %s", o.code)
	}
	return nil
}

// newChain drops the chain: the next request carries the whole history.
func (c *client) newChain() { c.prev, c.older, c.pending = "", "", nil }

func (c *client) closeWS() {
	if c.ws != nil {
		c.ws.CloseNow()
		c.ws = nil
	}
}

// body is the next create's JSON.
func (c *client) body() []byte {
	input := c.history
	prev := c.prev
	store := c.http && !c.mistakes["chain-unstored"]
	if prev != "" && !(c.mistakes["resend"] && !c.http) {
		input = c.pending // the mistake over a WebSocket: the whole history again
	}
	req := map[string]any{"model": "instant", "input": input, "store": store, "prompt_cache_key": c.cacheKey}
	if !c.noTools {
		req["tools"] = json.RawMessage(tools)
	}
	if prev != "" && c.older != "" && c.mistakes["stale-parent"] && !c.staled {
		// The mistake, once: a "last response id" that lagged a turn behind
		// names the response before the newest, with only the new items.
		prev, c.staled = c.older, true
	}
	if prev != "" {
		req["previous_response_id"] = prev
	}
	if c.http {
		req["stream"] = true
	} else {
		req["type"] = "response.create"
	}
	b, _ := json.Marshal(req)
	return b
}

func (c *client) send(ctx context.Context) (outcome, error) {
	if c.http {
		return c.sendHTTP(ctx)
	}
	if c.ws == nil {
		if err := c.dial(ctx); err != nil {
			return outcome{}, err
		}
		if c.http {
			return c.sendHTTP(ctx)
		}
	}
	if err := c.ws.Write(ctx, websocket.MessageText, c.body()); err != nil {
		return outcome{broken: true}, nil
	}
	for {
		_, b, err := c.ws.Read(ctx)
		if err != nil {
			return outcome{broken: true}, nil
		}
		if o, done := c.event(b); done {
			return o, nil
		}
	}
}

// dial opens the WebSocket; a refused upgrade falls back to HTTP, or,
// with the mistakes, is tried again a few times.
func (c *client) dial(ctx context.Context) error {
	url := "ws" + strings.TrimPrefix(c.base, "http") + "/responses"
	for attempt := 0; ; attempt++ {
		ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + c.key}}})
		if err == nil {
			ws.SetReadLimit(64 << 20)
			c.ws = ws
			return nil
		}
		refused := resp != nil && (resp.StatusCode == 426 || resp.StatusCode == 405 || resp.StatusCode == 404)
		switch {
		case !refused:
			return err
		case !c.mistakes["no-fallback"]:
			c.http = true
			c.newChain()
			return nil
		case attempt >= 3:
			return fmt.Errorf("upgrade refused %d times", attempt+1)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// event reads one server event; done when it ends the request.
func (c *client) event(b []byte) (outcome, bool) {
	var ev struct {
		Type     string          `json:"type"`
		Code     string          `json:"code"` // the flat shape
		Status   int             `json:"status"`
		Error    json.RawMessage `json:"error"`
		Headers  map[string]any  `json:"headers"`
		Response struct {
			ID     string            `json:"id"`
			Output []json.RawMessage `json:"output"`
		} `json:"response"`
	}
	if json.Unmarshal(b, &ev) != nil {
		return outcome{}, false
	}
	switch ev.Type {
	case "response.completed", "response.incomplete":
		return outcome{respID: ev.Response.ID, output: ev.Response.Output}, true
	case "response.failed":
		return outcome{broken: true}, true
	case "error":
		o := outcome{failed: true, code: ev.Code}
		if !c.mistakes["flat-errors"] && o.code == "" {
			var nested struct{ Code string }
			_ = json.Unmarshal(ev.Error, &nested)
			o.code = nested.Code
		}
		if ms, ok := ev.Headers["retry-after-ms"].(string); ok {
			o.retryMS, _ = strconv.Atoi(ms)
		}
		return o, true
	}
	return outcome{}, false
}

func (c *client) sendHTTP(ctx context.Context) (outcome, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/responses", bytes.NewReader(c.body()))
	if err != nil {
		return outcome{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return outcome{broken: true}, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		var e struct{ Error struct{ Code string } }
		_ = json.Unmarshal(b, &e)
		o := outcome{failed: true, code: e.Error.Code}
		o.retryMS, _ = strconv.Atoi(resp.Header.Get("retry-after-ms"))
		if o.retryMS == 0 {
			s, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			o.retryMS = s * 1000
		}
		if o.code == "" {
			return o, fmt.Errorf("status %d: %s", resp.StatusCode, b)
		}
		return o, nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if o, done := c.event([]byte(data)); done {
			return o, nil
		}
	}
	return outcome{broken: true}, nil
}
