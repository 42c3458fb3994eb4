package server_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"

	"agentloop/app"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// Two sub-agents share one WebSocket as two lanes: each names its
// stream_id, the engine runs both at once, and each lane's events (and
// its store:false continuations) stay its own.
func Example_twoSubAgentsAsLanes() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "agentloop-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := app.Defaults()
	cfg.Addr, cfg.DB = "127.0.0.1:0", filepath.Join(dir, "agentloop.db")
	a, err := app.New(ctx, cfg, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := a.Start(); err != nil {
		log.Fatal(err)
	}
	defer a.Shutdown(ctx)

	client := openai.NewClient(option.WithBaseURL(a.URL()+"/v1/"), option.WithAPIKey("sk-local"))
	conn, err := client.Responses.Connect(ctx, responses.ResponseConnectionOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	tasks := map[string]string{
		"agent_a": "Summarise the README in one sentence.",
		"agent_b": "List two risks of the change.",
	}
	lanes := map[string]*responses.ResponseLane{}
	for id, task := range tasks {
		lane, err := conn.Lane(id) // attach before sending
		if err != nil {
			log.Fatal(err)
		}
		lanes[id] = lane
		if err := conn.Create(ctx, responses.ResponsesClientEventResponseCreateParam{
			Model: "burst", Store: openai.Bool(false), StreamID: openai.String(id),
			Input: responses.ResponsesClientEventResponseCreateInputUnionParam{OfString: openai.String(task)},
		}); err != nil {
			log.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	status := map[string]string{}
	var mu sync.Mutex
	for id, lane := range lanes {
		wg.Go(func() {
			r, err := lane.FinalResponse(ctx)
			if err != nil {
				log.Fatal(err)
			}
			mu.Lock()
			status[id] = string(r.Status)
			mu.Unlock()
		})
	}
	wg.Wait()
	fmt.Println("agent_a:", status["agent_a"])
	fmt.Println("agent_b:", status["agent_b"])
	// Output:
	// agent_a: completed
	// agent_b: completed
}
