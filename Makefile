# memprobe: `make probe` builds and runs the main job; `make test` runs the
# test suite. Both install what they need beyond Go (OpenBLAS) first.

GO      ?= go
BIN     := bin/probe
# Build tags for the fastest GEMM backend this machine can link (openblas or
# none); evaluated after `deps` has had its chance to install it.
TAGS     = $(shell ./scripts/blas-tags.sh)
# The main job: every plan's phases with 63 worker threads, each in fresh
# child processes, 3 repetitions (docs/run.md: about 4 minutes on 2 cores);
# the report goes to probe-<commit>.json, its tables to stdout.
PROBE_ARGS ?= run --threads 63
# probe exec --sites preloads this library, found beside bin/probe; the
# flags are outside/sites' CFlags (its tests build it the same way).
# sites.c #includes the library's other units (outside/sites/preload/*):
# one translation unit.
SITES_CC     ?= gcc
SITES_CFLAGS := -O2 -g -shared -fPIC -pthread -fvisibility=hidden -Wall

# A package's tests may take longer than go test's default 10 minutes
# under the race detector on 2 loaded cores (outside/sites: 471 s once).
TEST_TIMEOUT ?= 30m

.PHONY: all deps build probe test test-short vet race bench bench-trainer clean

all: build

deps:
	@./scripts/install-deps.sh

# bin/probe is the lean binary probe run measures (its probe train children
# are itself); bin/probe-viz is the same command with gonum/plot and pprof's
# UI linked (-tags viz: ~12 MiB more at start-up), which bin/probe runs for
# report --html, history --chart, plot and pprof.
build: deps
	$(GO) build -buildvcs=auto -tags "$(TAGS)" -o $(BIN) ./cmd/probe
	$(GO) build -buildvcs=auto -tags "$(TAGS) viz" -o $(BIN)-viz ./cmd/probe
	$(SITES_CC) $(SITES_CFLAGS) -o bin/libmemprobe-sites.so outside/sites/preload/sites.c -lm

probe: build
	./$(BIN) $(PROBE_ARGS)

vet: deps
	$(GO) vet ./...
	$(GO) vet -tags "$(TAGS)" ./...
	$(GO) vet -tags "$(TAGS) viz" ./cmd/probe

# The full suite: vet, every test with the fast backend, every test with
# the default pure-Go build, and the race detector over the concurrent code
# (-short skips the long training runs, which the race detector slows 10x),
# and the viz commands (probe plot, probe pprof, report --html, history
# --chart: -tags viz, kept out of the measured binary). The first line runs
# report/htmlreport's browser test in headless Chromium (skipped, saying so,
# where none is installed; .ci/run installs Debian's).
test: vet
	$(GO) test -timeout $(TEST_TIMEOUT) -tags "$(TAGS)" ./...
	$(GO) test -timeout $(TEST_TIMEOUT) -short ./...
	$(GO) test -timeout $(TEST_TIMEOUT) -race -short -tags "$(TAGS)" ./trainer/... ./ledger/... ./instrument/... ./outside/... ./run/...
	$(GO) test -tags "$(TAGS) viz" -run 'Plot|Pprof|CheckHTTP|HTML|HistoryChart' ./cmd/probe

test-short: deps
	$(GO) test -short -tags "$(TAGS)" ./...

bench: deps
	$(GO) test -tags "$(TAGS)" -run '^$$' -bench . -benchtime 5x ./trainer/...

# Our trainer at 1, 2 and 63 threads: tokens/s and peak RSS in one table.
bench-trainer: build
	./scripts/bench-trainer.sh

clean:
	rm -rf bin
