package drill

import (
	"testing"

	"agentloop/api"
)

func armed(t *testing.T, d *Drills, s api.DrillSpec) api.Drill {
	t.Helper()
	dr, err := d.Arm(s)
	if err != nil {
		t.Fatal(err)
	}
	return dr
}

func TestDrillFiresAfterTurnsAtMostTimesInScope(t *testing.T) {
	d := NewDrills(nil, "")
	if d.fire(hookStream, "ws:a", "", api.DrillFiring{}) != nil {
		t.Fatal("fired with nothing armed")
	}
	dr := armed(t, d, api.DrillSpec{Drill: api.DrillStall, AfterTurns: 2, Times: 2, Scope: "lane-1"})
	if dr.Times != 2 || dr.DurationMS != defaultDrillHold.Milliseconds() || dr.Object != "drill" {
		t.Fatalf("armed %+v", dr)
	}
	// after_turns counts the session's finished responses.
	d.finished("ws:a")
	if d.fire(hookStream, "ws:a", "lane-1", api.DrillFiring{}) != nil {
		t.Fatal("fired after 1 of 2 turns")
	}
	d.finished("ws:a")
	// Another hook, another scope and another session do not fire it.
	if d.fire(hookHTTPCreate, "ws:a", "lane-1", api.DrillFiring{}) != nil ||
		d.fire(hookStream, "ws:a", "lane-2", api.DrillFiring{}) != nil ||
		d.fire(hookStream, "ws:b", "lane-1", api.DrillFiring{}) != nil {
		t.Fatal("fired out of its hook, scope or session")
	}
	for i := 0; i < 2; i++ {
		if d.fire(hookStream, "ws:a", "lane-1", api.DrillFiring{ResponseID: "resp_x", Session: "ws:a"}) == nil {
			t.Fatalf("firing %d missing", i+1)
		}
	}
	if d.fire(hookStream, "ws:a", "lane-1", api.DrillFiring{}) != nil {
		t.Fatal("fired more than times")
	}
	got, _ := d.Get(dr.ID)
	if got.Fired != 2 || len(got.Firings) != 2 || got.Firings[0].ResponseID != "resp_x" || got.Firings[0].AtUnixNS == 0 {
		t.Fatalf("firings %+v", got)
	}
	// Spent drills stop the counting: the hooks' fast path is back.
	if !d.idle() || len(d.counts) != 0 {
		t.Fatalf("idle %v, counts of %d drills", d.idle(), len(d.counts))
	}
}

// TestEachDrillCountsFromItsOwnArming: a drill armed mid-session counts
// the session's responses from its arming, not from the first drill's.
func TestEachDrillCountsFromItsOwnArming(t *testing.T) {
	d := NewDrills(nil, "")
	first := armed(t, d, api.DrillSpec{Drill: api.DrillStall, AfterTurns: 3})
	d.finished("ws:a")
	d.finished("ws:a")
	later := armed(t, d, api.DrillSpec{Drill: api.DrillHTTP503, AfterTurns: 1})
	if d.fire(hookHTTPCreate, "ws:a", "", api.DrillFiring{}) != nil {
		t.Fatal("the later drill fired before a response finished since its arming")
	}
	d.finished("ws:a") // the first drill's third, the later one's first
	if dr := d.fire(hookHTTPCreate, "ws:a", "", api.DrillFiring{}); dr == nil || dr.ID != later.ID {
		t.Fatalf("the later drill after its first response: %+v", dr)
	}
	if dr := d.fire(hookStream, "ws:a", "", api.DrillFiring{}); dr == nil || dr.ID != first.ID {
		t.Fatalf("the first drill after its third response: %+v", dr)
	}
}

func TestDrillAfterZeroFiresOnTheFirstAndUpgradesCountAttempts(t *testing.T) {
	d := NewDrills(nil, "")
	armed(t, d, api.DrillSpec{Drill: api.DrillHTTP429})
	if d.fire(hookHTTPCreate, "http:key:k", "k", api.DrillFiring{}) == nil {
		t.Fatal("after_turns 0 did not fire on the first")
	}
	armed(t, d, api.DrillSpec{Drill: api.DrillRefuseUpgrade, AfterTurns: 1, Scope: "s"})
	if d.fire(hookUpgrade, "", "s", api.DrillFiring{Upgrade: true}) != nil {
		t.Fatal("refused the first upgrade with after_turns 1")
	}
	if d.fire(hookUpgrade, "", "s", api.DrillFiring{Upgrade: true}) == nil {
		t.Fatal("did not refuse the second upgrade")
	}
}

func TestDrillDisarmAndBoundedSessions(t *testing.T) {
	d := NewDrills(nil, "")
	dr := armed(t, d, api.DrillSpec{Drill: api.DrillEvictCache, AfterTurns: maxDrillAfter})
	for i := 0; i < maxDrillSessions+50; i++ {
		d.finished("ws:" + string(rune('a'+i%26)) + string(rune(i)))
	}
	if c := d.counts[dr.ID]; len(c.n) > maxDrillSessions || len(c.order) > maxDrillSessions {
		t.Fatalf("%d sessions counted, bound %d", len(c.n), maxDrillSessions)
	}
	if _, ok := d.Disarm(dr.ID); !ok {
		t.Fatal("disarm failed")
	}
	if _, ok := d.Disarm(dr.ID); ok {
		t.Fatal("disarmed twice")
	}
	if !d.idle() || len(d.counts) != 0 || len(d.List()) != 0 {
		t.Fatal("a disarmed registry still counts")
	}
}

func TestCheckDrillNamesTheParameter(t *testing.T) {
	for _, c := range []struct {
		spec  api.DrillSpec
		param string
	}{
		{api.DrillSpec{}, "drill"},
		{api.DrillSpec{Drill: "explode"}, "drill"},
		{api.DrillSpec{Drill: api.DrillStall, AfterTurns: -1}, "after_turns"},
		{api.DrillSpec{Drill: api.DrillStall, Times: -2}, "times"},
		{api.DrillSpec{Drill: api.DrillEvictCache, DurationMS: 5}, "duration_ms"},
		{api.DrillSpec{Drill: api.DrillStall, DurationMS: -5}, "duration_ms"},
		{api.DrillSpec{Drill: api.DrillStall, Scope: string(make([]byte, 300))}, "scope"},
		{api.DrillSpec{Drill: api.DrillStall, Status: 405}, "status"},
		{api.DrillSpec{Drill: api.DrillRefuseUpgrade, Status: 500}, "status"},
	} {
		s := c.spec
		err := Check(&s)
		if err == nil || err.Param != c.param || err.Status != 400 {
			t.Errorf("%+v: got %v, want a 400 naming %s", c.spec, err, c.param)
		}
	}
	s := api.DrillSpec{Drill: api.DrillHTTP503}
	if err := Check(&s); err != nil || s.Times != 1 || s.DurationMS != 1000 {
		t.Fatalf("defaults: %+v %v", s, err)
	}
}
