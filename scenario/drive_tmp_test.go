package scenario

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestDriveTmp(t *testing.T) {
	s, _ := Lookup(os.Getenv("SC"))
	seed := int64(1)
	fmt.Sscanf(os.Getenv("SEED"), "%d", &seed)
	w := s.NewWorkspace()
	var hist []Step
	total := len(s.Task) + len(s.DeveloperMessage(seed))
	var all strings.Builder
	all.WriteString(s.DeveloperMessage(seed))
	all.WriteString(s.Task)
	for turn := 1; turn <= 60; turn++ {
		act := s.Next(seed, hist)
		if act.Done {
			fmt.Printf("turn %d DONE: %s\n", turn, act.Text)
			break
		}
		c := act.Calls[0]
		out, err := w.Call(c.Name, c.Arguments)
		if err != nil {
			t.Fatalf("call error: %v", err)
		}
		total += len(out) + len(c.Arguments) + len(act.Text)
		all.WriteString(act.Text)
		all.WriteString(c.Arguments)
		all.WriteString(out)
		args := c.Arguments
		if len(args) > 150 {
			args = args[:150]
		}
		fmt.Printf("turn %d %s %s -> %d bytes\n", turn, c.Name, args, len(out))
		if os.Getenv("SHOW") != "" && (c.Name == "run_tests" || c.Name == "apply_patch") {
			fmt.Println(out)
		}
		hist = append(hist, Step{Call: c, Output: out})
	}
	fmt.Println("total chars", total, "check:", s.Check(w))
	fmt.Println("fresh check:", s.Check(s.NewWorkspace()) != nil)
	os.MkdirAll("/tmp/scdrive", 0o755)
	os.WriteFile(fmt.Sprintf("/tmp/scdrive/%s-%d.txt", s.Name, seed), []byte(all.String()), 0o644)
}
