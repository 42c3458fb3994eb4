# agentloop: `make run` serves, `make test` runs every test (browser tests included).
GO        ?= go
PW_DIR    := $(CURDIR)/.pw
# The browser the tests drive: Debian's headless build of Chromium, the
# kind Playwright itself runs headless. The full browser in its headless
# mode cost the browser tests half as much CPU again (e2e alone: 299-319
# busy CPU-seconds against 198-201, 160-173 s against 111-113 s).
CHROMIUM  ?= /usr/bin/chromium-headless-shell
E2E_ENV   := PLAYWRIGHT_DRIVER_PATH=$(PW_DIR) PLAYWRIGHT_NODEJS_PATH=$$(command -v node) CHROMIUM_PATH=$(CHROMIUM)
# Every package; the slowest first (go test runs each once), so that they
# start first and the short ones fill the cores around them. Three
# packages at a time on two cores: the browser tests mostly wait (the
# browser, modelled time), and a third package uses the core they leave
# (8m20s against a median of 9m00s of three at go test's default of two;
# four at a time, with four parallel tests each, took over ten minutes).
PKGS      := ./e2e/ ./rollout/ ./cmd/agentloop/ ./server/ ./...
# The race detector instruments every package of ours and every dependency
# but the tokenizer's two: regexp2 and tiktoken-go are pure computation over
# tables built once and only read after (inference/tokenizer.go says why the
# shared codec is safe for concurrent use), and the engine's real work of
# re-tokenizing every stateless request's history ran four to five times
# slower instrumented: the suite took 319 s and 618 busy CPU-seconds against
# 351-365 s and 684-712 (one run each, the same afternoon). Our code, every
# call into them included, stays instrumented, and INFERENCE_FULL_RACE then
# runs the tokenizer's own package (its concurrency tests among them) with
# those two instrumented as well: the whole package, about 3 s more than its
# concurrency tests alone, so that no renamed test leaves it checking nothing.
RACE      := -race -gcflags='github.com/dlclark/regexp2/...=-race=false' -gcflags='github.com/tiktoken-go/tokenizer/...=-race=false'
INFERENCE_FULL_RACE := $(GO) test -race -count=1 ./inference/

.PHONY: run cluster build test unit e2e e2e-deps clients-deps bench fuzz lint generate clean

run:
	$(GO) run ./cmd/agentloop serve

## cluster: N replicas (REPLICAS, default 2) on a throwaway PostgreSQL behind HAProxy, on PORT (8080).
cluster:
	sh scripts/cluster.sh

build:
	$(GO) build -o bin/agentloop ./cmd/agentloop

## test: every test, with the race detector; installs the browser test set-up and the real clients first.
test: e2e-deps clients-deps
	$(E2E_ENV) $(GO) test $(RACE) -count=1 -p 3 -timeout 20m $(PKGS)
	$(INFERENCE_FULL_RACE)

## unit: every test but the browser tests.
unit:
	$(GO) test $(RACE) -count=1 $$($(GO) list ./... | grep -v /e2e)
	$(INFERENCE_FULL_RACE)

## e2e: browser tests only; screenshots land in e2e/screenshots.
e2e: e2e-deps
	$(E2E_ENV) E2E_SCREENSHOTS=1 $(GO) test $(RACE) -count=1 -v ./e2e/...
	@echo "screenshots: $(CURDIR)/e2e/screenshots"

e2e-deps:
	CHROMIUM_PATH=$(CHROMIUM) sh scripts/e2e-setup.sh

## clients-deps: the real clients package clients drives (the Codex CLI, pinned) in .clients/.
clients-deps:
	sh scripts/clients-setup.sh

## bench: the testing.B benchmarks, then the overhead table (see also: agentloop bench load|matrix).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 5x ./api/ ./inference/ ./policy/ ./store/... ./bench/
	$(GO) run ./cmd/agentloop bench overhead

## fuzz: the long fuzz runs, every Fuzz target in every package (each FUZZTIME, default 1,000,000 executions); corpora live in each package's testdata/fuzz.
FUZZTIME ?= 1000000x
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for name in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$name ($$pkg, $(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; done; done

lint:
	$(GO) vet ./...
	$(GO) tool templ generate && git diff --exit-code -- '*_templ.go'

generate:
	$(GO) tool templ generate

clean:
	rm -rf bin .pw .clients .testbin e2e/screenshots
