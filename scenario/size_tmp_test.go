package scenario

import (
	"fmt"
	"testing"
)

func TestSizesTmp(t *testing.T) {
	for _, s := range All()[1:2] {
		w := s.NewWorkspace()
		total := 0
		for _, p := range w.Files() {
			c, _ := w.ReadFile(p)
			total += len(c)
			fmt.Printf("%7d %s\n", len(c), p)
		}
		fmt.Println(len(w.Files()), "files", total)
		for seed := int64(1); seed < 7; seed++ {
			a := newAgent(seed, s.Name, styleGo, nil)
			fmt.Println(seed, a.rng.chance(1, 2), a.rng.chance(1, 2), a.rng.chance(1, 3))
		}
	}
}
