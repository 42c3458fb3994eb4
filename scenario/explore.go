package scenario

// explorePath is a file a plan may read to understand a repository, and
// why it reads it.
type explorePath struct{ path, why string }

// exploration is the opening every plan shares: list the repository, read
// each file it needs once, then read more of a seeded pool of files until
// the agent's context holds enough of the repository.
type exploration struct {
	a       *agent
	pool    []string // the pool's paths, in the seed's order
	why     map[string]string
	goal    int             // output characters the agent explores up to
	present map[string]bool // what the listing showed
	read    map[string]bool
}

// explore shuffles pool by the seed and draws the context goal, goalMin
// plus up to contextGoalSpan characters.
func (a *agent) explore(pool []explorePath, goalMin int) *exploration {
	x := &exploration{a: a, pool: make([]string, len(pool)), why: map[string]string{}, present: map[string]bool{}, read: map[string]bool{}}
	for i, p := range pool {
		x.pool[i] = p.path
		x.why[p.path] = p.why
	}
	a.rng.shuffle(x.pool)
	x.goal = goalMin + a.rng.intn(contextGoalSpan)
	return x
}

// list lists the repository; readOnce reads only what it showed.
func (x *exploration) list(text string) {
	for _, f := range x.a.listFiles(text, "") {
		x.present[f] = true
	}
}

// readOnce reads p if the listing showed it and it was not read yet.
func (x *exploration) readOnce(p, text string) {
	if x.present[p] && !x.read[p] {
		x.read[p] = true
		x.a.read(text, p)
	}
}

// readMore reads paths (from the pool) not read yet, each for its reason,
// until the context goal is met or max more files were read.
func (x *exploration) readMore(paths []string, max int) {
	extra := 0
	for _, p := range paths {
		if x.a.outChars >= x.goal || extra >= max {
			break
		}
		if x.present[p] && !x.read[p] {
			extra++
			x.readOnce(p, x.why[p])
		}
	}
}
