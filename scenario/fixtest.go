package scenario

import (
	"errors"
	"fmt"
	"strings"
)

// fix-failing-test: two pricing bugs in a Go service. money.PercentOf divides
// before it multiplies, so every rate applied to less than $100 rounds to
// nothing; pricing.TierFor compares with > where the README says an order
// that reaches a threshold gets the tier. The tests already say so.

const (
	fulfilMoneyFile    = "internal/money/money.go"
	fulfilDiscountFile = "internal/pricing/discount.go"
)

var fulfilPercentFix = edit{
	path:        fulfilMoneyFile,
	old:         "return Cents(int64(amount) / int64(OneHundredPercent) * int64(bp))",
	new:         "// Multiply before dividing: dividing first truncates amounts below\n// one whole unit of the rate to zero.\nreturn Cents(divRound(int64(amount)*int64(bp), int64(OneHundredPercent)))",
	after:       "func PercentOf(",
	wrongHeader: "func PercentOf(amount Cents, pct int64) Cents {",
}

var fulfilTierFix = edit{
	path:        fulfilDiscountFile,
	old:         "if subtotal > t.MinSubtotal {",
	new:         "if subtotal >= t.MinSubtotal { // reaching a threshold earns the tier",
	after:       "func TierFor(",
	wrongHeader: "func TierFor(subtotal money.Cents) Tier {",
}

// quickFix is fix-failing-test in a short session, for a class: the same
// repository, bugs, tools and success check, but the agent reads only what
// the failures point at (no exploring beyond), so the conversation stays
// under half the full one and a race of it ends in seconds.
func quickFix() *Scenario {
	s := fixFailingTest()
	s.Name = "quick-fix"
	s.Title = "fulfil, a short session (Go order-fulfilment service)"
	s.Description = "fix-failing-test in a short session for a class: the agent reads only what the failing tests point at, " +
		"fixes both pricing bugs and re-runs go test; about half the turns and under half the context."
	s.Short = true
	s.plan = func(a *agent) { planFulfil(a, 0, 0, 0) }
	return s
}

func fixFailingTest() *Scenario {
	s := &Scenario{
		Name:  "fix-failing-test",
		Title: "fulfil (Go order-fulfilment service)",
		Description: "CI is red on a Go service: money.PercentOf truncates before applying a rate and the volume-tier " +
			"lookup misses orders exactly at a threshold. The agent explores, runs go test, fixes both and re-runs.",
		Task: "CI on main is failing for `fulfil` — `go test ./...` reports failures in `internal/money` and " +
			"`internal/pricing`. Please find the root cause and fix the code so the whole suite passes. " +
			"The tests describe the intended behaviour (see the pricing rules in the README), so don't change the tests.",
		Tools:    standardTools(),
		language: "Go",
		build:    buildFulfil,
		suite:    &testSuite{style: styleGo, module: fulfilModule, checks: fulfilChecks()},
		plan:     planFixFailingTest,
	}
	s.check = func(v repoView) error {
		var errs []error
		if fulfilPercentImpl(v) != percentFixed {
			errs = append(errs, errors.New("money.PercentOf still does not multiply before dividing with rounding"))
		}
		if fulfilTierImpl(v) != tierFixed {
			errs = append(errs, errors.New("pricing.TierFor still misses subtotals exactly at a threshold"))
		}
		return errors.Join(errs...)
	}
	return s
}

// How the repository currently implements the two functions.
type implState int

const (
	implUnknown implState = iota
	percentBuggy
	percentFixed
	tierBuggy
	tierFixed
)

// funcBody returns the text of a top-level Go function, from its signature
// to the closing brace at column 0, with all whitespace removed.
func funcBody(src, signaturePrefix string) string {
	i := strings.Index(src, signaturePrefix)
	if i < 0 {
		return ""
	}
	rest := src[i:]
	if j := strings.Index(rest, "\n}"); j >= 0 {
		rest = rest[:j+2]
	}
	return strings.Join(strings.Fields(stripGoComments(rest)), "")
}

func stripGoComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func fulfilPercentImpl(v repoView) implState {
	body := funcBody(v.file(fulfilMoneyFile), "func PercentOf(")
	for _, fixed := range []string{
		"divRound(int64(amount)*int64(bp),int64(OneHundredPercent))",
		"divRound(int64(amount)*int64(bp),10000)",
		"divRound(int64(bp)*int64(amount),int64(OneHundredPercent))",
		"divRound(int64(bp)*int64(amount),10000)",
	} {
		if strings.Contains(body, "returnCents("+fixed+")") {
			return percentFixed
		}
	}
	for _, buggy := range []string{
		"int64(amount)/int64(OneHundredPercent)*int64(bp)",
		"int64(amount)/10000*int64(bp)",
	} {
		if strings.Contains(body, buggy) {
			return percentBuggy
		}
	}
	return implUnknown
}

func fulfilTierImpl(v repoView) implState {
	body := funcBody(v.file(fulfilDiscountFile), "func TierFor(")
	switch {
	case strings.Contains(body, "subtotal>=t.MinSubtotal"), strings.Contains(body, "t.MinSubtotal<=subtotal"):
		return tierFixed
	case strings.Contains(body, "subtotal>t.MinSubtotal"), strings.Contains(body, "t.MinSubtotal<subtotal"):
		return tierBuggy
	}
	return implUnknown
}

// percentOf evaluates PercentOf as the repository implements it.
func percentOf(state implState, amount, bp int64) int64 {
	if state == percentBuggy {
		return amount / 10000 * bp
	}
	return divRoundHalfAway(amount*bp, 10000)
}

func divRoundHalfAway(n, d int64) int64 {
	q, r := n/d, n%d
	if r < 0 {
		r = -r
	}
	if 2*r >= d {
		if n < 0 {
			q--
		} else {
			q++
		}
	}
	return q
}

type fulfilTier struct {
	name string
	min  int64
	off  int64
}

var fulfilTiers = []fulfilTier{{"gold", 100000, 1000}, {"silver", 50000, 500}, {"bronze", 20000, 250}}

func tierFor(state implState, subtotal int64) (fulfilTier, bool) {
	for _, t := range fulfilTiers {
		if subtotal > t.min || (state != tierBuggy && subtotal == t.min) {
			return t, true
		}
	}
	return fulfilTier{}, false
}

// centsString formats like money.Cents.String.
func centsString(c int64) string {
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	return fmt.Sprintf("%s$%d.%02d", sign, c/100, c%100)
}

type fulfilQuoteCase struct {
	name                string
	subtotal            int64
	couponBp, couponMax int64
	taxBp               int64
	want                int64
}

// The TestQuote table of internal/pricing/discount_test.go.
var fulfilQuoteCases = []fulfilQuoteCase{
	{name: "single line no discounts", subtotal: 2500, want: 3295},
	{name: "coupon on small order with tax", subtotal: 2899, couponBp: 1500, taxBp: 650, want: 3419},
	{name: "volume tier at threshold", subtotal: 20000, want: 19500},
	{name: "gold tier with capped coupon", subtotal: 100000, couponBp: 2000, couponMax: 5000, taxBp: 725, want: 91163},
	{name: "free shipping boundary", subtotal: 10000, taxBp: 400, want: 10400},
}

// quote mirrors pricing.Quote and returns the total and the breakdown as
// fmt's %+v prints it.
func (c fulfilQuoteCase) quote(pct, tier implState) (int64, string) {
	var tierName string
	var volume int64
	if t, ok := tierFor(tier, c.subtotal); ok {
		tierName = t.name
		volume = percentOf(pct, c.subtotal, t.off)
	}
	after := c.subtotal - volume
	var coupon int64
	if c.couponBp > 0 {
		coupon = percentOf(pct, after, c.couponBp)
		if c.couponMax > 0 && coupon > c.couponMax {
			coupon = c.couponMax
		}
	}
	taxable := after - coupon
	tax := percentOf(pct, taxable, c.taxBp)
	var shipping int64
	if taxable < 10000 {
		shipping = 795
	}
	total := taxable + tax + shipping
	return total, fmt.Sprintf("{Subtotal:%s Tier:%s VolumeDiscount:%s CouponDiscount:%s Tax:%s Shipping:%s Total:%s}",
		centsString(c.subtotal), tierName, centsString(volume), centsString(coupon), centsString(tax), centsString(shipping), centsString(total))
}

func fulfilChecks() map[string]testCheck {
	checks := map[string]testCheck{}
	subtest := func(name string) string { return strings.ReplaceAll(name, " ", "_") }
	percentCases := []struct {
		name             string
		amount, bp, want int64
	}{
		{"zero rate", 1999, 0, 0},
		{"whole dollars", 20000, 1500, 3000},
		{"fifteen percent of odd cents", 1999, 1500, 300},
		{"small amount", 250, 825, 21},
		{"half a cent rounds up", 50, 100, 1},
		{"negative refund", -1999, 1500, -300},
		{"full rate", 1234, 10000, 1234},
	}
	for _, c := range percentCases {
		checks["internal/money::TestPercentOf/"+subtest(c.name)] = func(v repoView) *testFailure {
			state := fulfilPercentImpl(v)
			if state == implUnknown {
				return &testFailure{marker: `t.Errorf("PercentOf(`, message: fmt.Sprintf("PercentOf(%d, %d) gave an unexpected result, want %d", c.amount, c.bp, c.want)}
			}
			if got := percentOf(state, c.amount, c.bp); got != c.want {
				return &testFailure{marker: `t.Errorf("PercentOf(`, message: fmt.Sprintf("PercentOf(%d, %d) = %d, want %d", c.amount, c.bp, got, c.want)}
			}
			return nil
		}
	}
	tierCases := []struct {
		name     string
		subtotal int64
		want     string
	}{
		{"below every tier", 19999, ""},
		{"exactly at tier threshold", 20000, "bronze"},
		{"between tiers", 75000, "silver"},
		{"exactly gold", 100000, "gold"},
		{"above gold", 432100, "gold"},
	}
	for _, c := range tierCases {
		checks["internal/pricing::TestTierFor/"+subtest(c.name)] = func(v repoView) *testFailure {
			state := fulfilTierImpl(v)
			got, ok := tierFor(state, c.subtotal)
			if state == implUnknown || got.name != c.want {
				return &testFailure{marker: `t.Errorf("TierFor(`, message: fmt.Sprintf("TierFor(%d) = %q, %v; want %q, %v", c.subtotal, got.name, ok, c.want, c.want != "")}
			}
			return nil
		}
	}
	for _, c := range fulfilQuoteCases {
		checks["internal/pricing::TestQuote/"+subtest(c.name)] = func(v repoView) *testFailure {
			pct, tier := fulfilPercentImpl(v), fulfilTierImpl(v)
			got, breakdown := c.quote(pct, tier)
			if pct == implUnknown || tier == implUnknown || got != c.want {
				return &testFailure{marker: `t.Errorf("Quote().Total`, message: fmt.Sprintf("Quote().Total = %s, want %s (breakdown %s)", centsString(got), centsString(c.want), breakdown)}
			}
			return nil
		}
	}
	return checks
}

// fulfilExplorePool is what the agent may read to understand the service,
// with why. The seed shuffles it; the agent reads until its context holds
// enough of the repository.
var fulfilExplorePool = []explorePath{
	{"internal/pricing/tax.go", "Checking how the tax rate is applied, since it goes through the same money helpers."},
	{"internal/httpapi/orders.go", "Looking at the orders handlers to see where amounts come in and go out."},
	{"internal/store/orders.go", "Reading the orders store to see which amounts are persisted."},
	{"internal/httpapi/invoices.go", "Checking the invoices handlers, which also carry amounts."},
	{"internal/store/invoices.go", "Reading the invoices store for how amounts and statuses are validated."},
	{"api/openapi.yaml", "Reading the API contract to confirm how amounts and rates are represented."},
	{"CHANGELOG.md", "Checking the changelog for recent changes to pricing and money."},
	{"internal/httpapi/respond.go", "Looking at how errors are mapped to responses."},
	{"internal/store/store.go", "Reading the store package entry point."},
	{"docs/ARCHITECTURE.md", "Reading the architecture notes on rounding."},
	{"internal/httpapi/orders_test.go", "Looking at the orders handler tests for the fixtures they use."},
	{"internal/store/products.go", "Checking how product prices are stored."},
	{"internal/httpapi/products.go", "Reading the products handlers for how prices come in."},
	{"internal/store/shipments.go", "Reading the shipments store, which the order flow hands off to."},
	{"internal/httpapi/shipments_test.go", "Looking at the shipment tests to see how the suite is structured."},
	{"internal/httpapi/invoices_test.go", "Checking the invoices tests for amount fixtures."},
	{"internal/httpapi/products_test.go", "Reading the product tests, which exercise unit prices."},
	{"internal/store/customers.go", "Checking the customers store, where the tax region comes from."},
	{"internal/httpapi/customers_test.go", "Looking at how customer regions are validated in the tests."},
	{"internal/httpapi/server.go", "Reading how the server wires the stores together."},
}

// Exploration bounds: the agent reads until it has seen contextGoal
// characters of output (the seed moves the goal within a range), and never
// more than maxExploreReads extra files.
const (
	contextGoalMin  = 230_000
	contextGoalSpan = 30_000
	maxExploreReads = 14
)

func planFixFailingTest(a *agent) { planFulfil(a, contextGoalMin, 3, maxExploreReads) }

// planFulfil is fix-failing-test's plan, exploring until the agent has
// seen goalMin characters of output (and up to contextGoalSpan more, by
// the seed): it reads up to preReads files (by the seed) before the first
// test run, and at most maxReads more after reading the failures.
func planFulfil(a *agent, goalMin, preReads, maxReads int) {
	// Seeded traits of this run; they cycle with the seed.
	focused := a.trait(2) == 0      // fix one package at a time
	sloppy := a.trait(3) == 1       // misremember a signature in the first patch
	verboseRerun := a.trait(4) >= 2 // re-run verbosely after the first patch
	x := a.explore(fulfilExplorePool, goalMin)
	split := min(1+a.rng.intn(3), preReads) // extra files read before the first test run

	x.list("Let me look at how the repository is laid out first.")
	x.readOnce("README.md", "Reading the README for the project's conventions and pricing rules.")
	for _, p := range x.pool[:split] {
		x.readOnce(p, x.why[p])
	}

	report := a.runTests("Running the whole test suite verbosely to see what fails and what passes.", "", true)
	if report.passed {
		a.finish("The whole suite already passes on this checkout, so there is nothing to fix.")
	}

	// Read the failing tests, then the code under test.
	moneyFails := report.failing("TestPercentOf")
	pricingFails := report.failing("TestTierFor") || report.failing("TestQuote")
	if moneyFails {
		readFailureContext(a, report, "money_test.go", "internal/money/money_test.go")
		x.readOnce(fulfilMoneyFile, "Now the implementation of PercentOf.")
	}
	if pricingFails {
		readFailureContext(a, report, "discount_test.go", "internal/pricing/discount_test.go")
		x.readOnce(fulfilDiscountFile, "Reading the tier lookup and coupon code in pricing.")
		x.readOnce("internal/pricing/quote.go", "And Quote, which combines tiers, coupons, tax and shipping.")
	}
	a.search("Finding every caller of PercentOf to judge the impact of a fix.", searchCall{Pattern: "PercentOf(", Path: "internal"})
	x.readMore(x.pool[split:], maxReads)

	var fixes []edit
	switch {
	case moneyFails && pricingFails && focused:
		fixes = []edit{fulfilPercentFix}
	default:
		if moneyFails || report.failing("TestQuote") {
			fixes = append(fixes, fulfilPercentFix)
		}
		if pricingFails {
			fixes = append(fixes, fulfilTierFix)
		}
	}
	intro := "PercentOf divides by 10000 before multiplying, so any amount under $100 truncates to zero before the rate is applied. " +
		"I'll fix that first: multiply, then round half away from zero with the existing divRound helper."
	if len(fixes) == 2 {
		intro = "Two root causes: PercentOf divides before multiplying (amounts under $100 truncate to zero), and TierFor uses > where " +
			"the README says reaching a threshold earns the tier. Fixing both."
	}
	a.applyEdits(fixes, sloppy, intro)

	confirmed := false // a verbose run of the whole suite passed
	for round := 0; round < 4; round++ {
		target := ""
		if round == 0 && len(fixes) == 1 && focused {
			target = "./internal/money/..."
		}
		report = a.runTests("Re-running the tests to check the fix.", target, verboseRerun && target == "")
		confirmed = report.passed && verboseRerun && target == ""
		if target != "" && report.passed {
			report = a.runTests("The money package passes now; running the whole suite.", "", verboseRerun)
			confirmed = report.passed && verboseRerun
		}
		if report.passed {
			break
		}
		// Something still fails: look at it again and fix what it points at.
		var next []edit
		if report.failing("TestTierFor") || report.failing("TestQuote") {
			readFailureContext(a, report, "discount_test.go", "internal/pricing/discount_test.go")
			a.read("TierFor still fails; re-reading discount.go around the tier lookup.", fulfilDiscountFile)
			next = append(next, fulfilTierFix)
		}
		if report.failing("TestPercentOf") {
			a.read("Re-reading money.go to see why PercentOf still fails.", fulfilMoneyFile)
			next = append(next, fulfilPercentFix)
		}
		pending, _ := a.pending(next)
		if len(pending) == 0 {
			break
		}
		a.applyEdits(pending, false, "TierFor compares with > but an order that reaches a tier's threshold must get that tier (the README and "+
			"TestTierFor/exactly_at_tier_threshold agree). Changing the comparison to >=.")
	}
	if !confirmed {
		report = a.runTests("Running the full suite verbosely to confirm nothing else regressed.", "", true)
	}
	if !report.passed {
		a.finish("I fixed the rounding in money.PercentOf and the threshold comparison in pricing.TierFor, but the suite still " +
			"reports failures I could not resolve:\n\n" + strings.Join(report.failures, "\n"))
	}
	a.finish(fulfilSummary(a))
}

// readFailureContext reads the test file around the first failure it
// reports, or the whole file if the output gives no line.
func readFailureContext(a *agent, r testReport, base, full string) {
	for _, loc := range r.locations {
		name, line, ok := strings.Cut(loc, ":")
		if !ok || name != base {
			continue
		}
		n := 0
		fmt.Sscanf(line, "%d", &n)
		if n > 0 {
			a.readRange(fmt.Sprintf("The failure points at %s:%d; reading the test around it.", base, n), full, max(n-30, 1), n+8)
			return
		}
	}
	a.read("Reading "+full+" to see what the failing test expects.", full)
}

func fulfilSummary(a *agent) string {
	changed := strings.Join(uniqueStrings(a.patched), ", ")
	return "The suite is green again (`go test ./...` passes in every package).\n\n" +
		"**What was wrong**\n" +
		"1. `money.PercentOf` computed `amount / 10000 * bp`. Integer division ran first, so any amount below $100.00 became 0 " +
		"before the rate was applied: a 15% coupon on $19.99 came out as $0.00 instead of $3.00, and sales tax on small orders vanished.\n" +
		"2. `pricing.TierFor` used `subtotal > t.MinSubtotal`, so an order of exactly $200.00 (or $1,000.00) missed the tier it had " +
		"reached. The README's pricing rules and `TestTierFor/exactly_at_tier_threshold` both say reaching a threshold earns the tier.\n\n" +
		"**What I changed** (" + changed + ")\n" +
		"- `PercentOf` now multiplies first and rounds half away from zero with the existing `divRound` helper: " +
		"`Cents(divRound(int64(amount)*int64(bp), int64(OneHundredPercent)))`.\n" +
		"- `TierFor` compares with `>=`.\n\n" +
		"No tests were changed. `TestQuote` passes too, since it exercises both paths (coupon and tax rounding, and the tier boundary)."
}

func uniqueStrings(xs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
