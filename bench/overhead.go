package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"agentloop/api"

	"github.com/coder/websocket"
	"github.com/tiktoken-go/tokenizer"
)

// Paths of the overhead benchmark, in column order.
var OverheadPaths = []string{"http", "http-optimized", "http-chained", "ws"}

// OverheadRow is the median measured pre-inference time of each path for
// one context size.
type OverheadRow struct {
	ContextTokens int                      `json:"context_tokens"`
	Median        map[string]time.Duration `json:"median_ns"`
}

// OverheadConfig says what to measure.
type OverheadConfig struct {
	BaseURL string // http://host:port of a server whose modelled costs are off
	Sizes   []int  // context sizes in tokens
	Repeats int    // measured requests per path and size
	Model   string
}

// o200k is the o200k_base codec of tiktoken-go, the encoding and library the
// engine's tokenizer wraps. bench counts tokens the way a client would, so it
// needs nothing of the engine's code. Loading the vocabulary is slow, so it
// happens once.
var o200k = sync.OnceValues(func() (tokenizer.Codec, error) {
	return tokenizer.Get(tokenizer.O200kBase)
})

// history builds a conversation of about n tokens: a developer message,
// then user messages of code and short assistant answers.
func history(tok tokenizer.Codec, n int) []json.RawMessage {
	var items []json.RawMessage
	add := func(role, text string) {
		b, _ := json.Marshal(map[string]any{"type": "message", "role": role, "content": []map[string]string{{"type": "input_text", "text": text}}})
		if role == "assistant" {
			b, _ = json.Marshal(map[string]any{"type": "message", "role": role, "content": []map[string]string{{"type": "output_text", "text": text}}})
		}
		items = append(items, b)
	}
	add("developer", "You are a coding agent working in a Go repository. Use the tools to inspect and change files.")
	total := 30
	for i := 0; total < n; i++ {
		var sb strings.Builder
		fmt.Fprintf(&sb, "Here is internal/service/handler_%d.go:\n", i)
		for j := 0; j < 40; j++ {
			fmt.Fprintf(&sb, "func (s *Service) handle%d_%d(ctx context.Context, req *Request%d) (*Response, error) {\n\tif err := s.validate(req); err != nil {\n\t\treturn nil, fmt.Errorf(\"handle %d: %%w\", err)\n\t}\n\treturn s.store.Get(ctx, req.ID)\n}\n", i, j, j, j)
		}
		text := sb.String()
		count, _ := tok.Count(text) // errors only in strict mode, which is never set
		total += count + 8
		add("user", text)
		add("assistant", fmt.Sprintf("I read handler_%d.go; the handlers validate and then read from the store.", i))
		total += 24
	}
	return items
}

func marshalInput(items []json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(items)
	return b
}

type overheadClient struct {
	cfg  OverheadConfig
	http *http.Client
}

// post sends a create and returns the response id.
func (c *overheadClient) post(ctx context.Context, path string, body map[string]any) (string, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", c.cfg.BaseURL+path+"/responses", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, raw)
	}
	var r struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", err
	}
	return r.ID, nil
}

// preInference reads the engine's trace for a response.
func (c *overheadClient) preInference(ctx context.Context, id string) (time.Duration, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", c.cfg.BaseURL+"/api/traces/"+id, nil)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var tr api.Trace
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		return 0, fmt.Errorf("trace %s: %w", id, err)
	}
	return tr.PreInference(), nil
}

func newItem(i int) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "user", "content": fmt.Sprintf("Step %d: run the tests again and report what changed in the output since the last run.", i)})
	return b
}

// Overhead measures every path at every size.
func Overhead(ctx context.Context, cfg OverheadConfig) ([]OverheadRow, error) {
	tok, err := o200k()
	if err != nil {
		return nil, err
	}
	if cfg.Repeats < 1 {
		cfg.Repeats = 5
	}
	if cfg.Model == "" {
		cfg.Model = api.DefaultModel
	}
	c := &overheadClient{cfg: cfg, http: &http.Client{Timeout: 2 * time.Minute}}
	var rows []OverheadRow
	for _, size := range cfg.Sizes {
		hist := history(tok, size)
		row := OverheadRow{ContextTokens: size, Median: map[string]time.Duration{}}
		for _, path := range OverheadPaths {
			samples, err := c.measure(ctx, path, hist, size)
			if err != nil {
				return nil, fmt.Errorf("%s at %d tokens: %w", path, size, err)
			}
			row.Median[path] = Median(samples)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func (c *overheadClient) measure(ctx context.Context, path string, hist []json.RawMessage, size int) ([]time.Duration, error) {
	key := fmt.Sprintf("overhead-%s-%d-%d", path, size, time.Now().UnixNano())
	base := map[string]any{"model": c.cfg.Model, "prompt_cache_key": key, "max_output_tokens": 8}
	with := func(extra map[string]any) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	var samples []time.Duration
	switch path {
	case "http", "http-optimized":
		prefix := "/baseline/v1"
		if path == "http-optimized" {
			prefix = "/v1"
		}
		items := slices.Clone(hist)
		// One unmeasured request warms what a previous turn would have.
		for i := 0; i <= c.cfg.Repeats; i++ {
			items = append(items, newItem(i))
			id, err := c.post(ctx, prefix, with(map[string]any{"store": false, "input": marshalInput(items)}))
			if err != nil {
				return nil, err
			}
			if i > 0 {
				d, err := c.preInference(ctx, id)
				if err != nil {
					return nil, err
				}
				samples = append(samples, d)
			}
		}
	case "http-chained":
		prev, err := c.post(ctx, "/v1", with(map[string]any{"store": true, "input": marshalInput(hist)}))
		if err != nil {
			return nil, err
		}
		for i := 0; i < c.cfg.Repeats; i++ {
			id, err := c.post(ctx, "/v1", with(map[string]any{"store": true, "previous_response_id": prev, "input": marshalInput([]json.RawMessage{newItem(i)})}))
			if err != nil {
				return nil, err
			}
			d, err := c.preInference(ctx, id)
			if err != nil {
				return nil, err
			}
			samples = append(samples, d)
			prev = id
		}
	case "ws":
		url := "ws" + strings.TrimPrefix(c.cfg.BaseURL, "http") + "/v1/responses"
		conn, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			return nil, err
		}
		defer conn.CloseNow()
		conn.SetReadLimit(64 << 20)
		prev := ""
		for i := -1; i < c.cfg.Repeats; i++ {
			body := with(map[string]any{"type": "response.create", "store": false})
			if i < 0 {
				body["input"] = marshalInput(hist)
			} else {
				body["previous_response_id"] = prev
				body["input"] = marshalInput([]json.RawMessage{newItem(i)})
			}
			b, _ := json.Marshal(body)
			if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
				return nil, err
			}
			id, err := readUntilTerminal(ctx, conn)
			if err != nil {
				return nil, err
			}
			if i >= 0 {
				d, err := c.preInference(ctx, id)
				if err != nil {
					return nil, err
				}
				samples = append(samples, d)
			}
			prev = id
		}
		conn.Close(websocket.StatusNormalClosure, "")
	}
	return samples, nil
}

func readUntilTerminal(ctx context.Context, conn *websocket.Conn) (string, error) {
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return "", err
		}
		ev, err := api.DecodeEvent(b)
		if err != nil {
			return "", err
		}
		if e := ev.AsError(); e != nil {
			return "", e
		}
		if api.IsTerminal(ev.Type) {
			return ev.Response.ID, nil
		}
	}
}

// Median is the middle of d (the upper middle of an even count), 0 when
// it is empty.
func Median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// FormatOverhead prints the table.
func FormatOverhead(w io.Writer, rows []OverheadRow) {
	fmt.Fprintf(w, "%-9s %14s %16s %14s %12s %10s %10s\n", "context", "http", "http-optimized", "http-chained", "ws", "http/ws", "ws 1k→max")
	for _, r := range rows {
		ratio := float64(r.Median["http"]) / float64(max(r.Median["ws"], 1))
		growth := float64(r.Median["ws"]) / float64(max(rows[0].Median["ws"], 1))
		fmt.Fprintf(w, "%-9s %14s %16s %14s %12s %9.1fx %9.2fx\n", fmt.Sprintf("%dk", r.ContextTokens/1000),
			round(r.Median["http"]), round(r.Median["http-optimized"]), round(r.Median["http-chained"]), round(r.Median["ws"]), ratio, growth)
	}
}

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d > 10*time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d
}

// TokenizerCost measures what o200k tokenization with tiktoken-go, which the
// engine's tokenizer wraps, costs per token on this machine, so tables can
// say it next to the figures it affects.
func TokenizerCost() time.Duration {
	tok, err := o200k()
	if err != nil {
		return 0
	}
	var text strings.Builder
	for _, it := range history(tok, 20000) {
		text.Write(it)
	}
	s := text.String()
	start := time.Now()
	ids, _, _ := tok.Encode(s)
	n := len(ids)
	return time.Since(start) / time.Duration(max(n, 1))
}
