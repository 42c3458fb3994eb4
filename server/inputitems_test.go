package server_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// Five input items of every kind a client sends back are listed with the
// id and status the SDK's ResponseItem types declare, each page's last_id
// names its last item, and a walk of pages of two returns every item
// once, in either order.
func TestInputItemsPagesWalkEveryItemOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unmodelled)
	ctx := h.ctx()
	body := `{"model":"spark","tools":[{"type":"function","name":"f"},{"type":"custom","name":"g"}],"input":[
		{"role":"user","content":"go"},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":"ok"},
		{"type":"custom_tool_call","call_id":"c2","name":"g","input":"x"},
		{"type":"custom_tool_call_output","call_id":"c2","output":"done"}]}`
	status, b := h.post("/v1/responses", body)
	if status != 200 {
		t.Fatalf("%d %s", status, b)
	}
	var created struct{ ID string }
	json.Unmarshal(b, &created)
	wantTypes := []string{"message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output"}
	for _, order := range []responses.InputItemListParamsOrder{responses.InputItemListParamsOrderAsc, responses.InputItemListParamsOrderDesc} {
		t.Run(string(order), func(t *testing.T) {
			var types []string
			seen := map[string]bool{}
			params := responses.InputItemListParams{Order: order, Limit: openai.Int(2)}
			for pages := 0; ; pages++ {
				if pages > 5 {
					t.Fatal("the walk does not end")
				}
				page, err := h.client.Responses.InputItems.List(ctx, created.ID, params)
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range page.Data {
					if it.ID == "" || it.Status != "completed" || seen[it.ID] {
						t.Fatalf("item %s (%s) listed with id %q status %q, seen before: %v", it.Type, it.RawJSON(), it.ID, it.Status, seen[it.ID])
					}
					seen[it.ID] = true
					types = append(types, it.Type)
				}
				var list struct {
					LastID string `json:"last_id"`
				}
				json.Unmarshal([]byte(page.RawJSON()), &list)
				if len(page.Data) > 0 && list.LastID != page.Data[len(page.Data)-1].ID {
					t.Fatalf("last_id %q is not the page's last item %q", list.LastID, page.Data[len(page.Data)-1].ID)
				}
				if !page.HasMore {
					break
				}
				params.After = openai.String(list.LastID)
			}
			if len(types) != 5 {
				t.Fatalf("the walk listed %d items: %v", len(types), types)
			}
			for i, typ := range types {
				want := wantTypes[i]
				if order == responses.InputItemListParamsOrderDesc {
					want = wantTypes[4-i]
				}
				if typ != want {
					t.Fatalf("item %s is %s, want %s (%v)", strconv.Itoa(i), typ, want, types)
				}
			}
		})
	}
}
