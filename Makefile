# deq — deep equilibrium models with certified stochastic fixed-point solvers.
GO      ?= go
GOFILES  = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go')

.PHONY: all build test test-race lint bench fuzz clean

all: lint test

build:
	$(GO) build ./...

## test: the project's test suite (what CI runs).
test: build
	$(GO) test -count=1 ./...

## lint: gofmt check and go vet.
lint:
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## bench: Go microbenchmarks with allocation counts (saved to
## $(BENCH_OUT)/go-bench.txt), then `deq bench`: JSON and plots in $(BENCH_OUT),
## tables in BENCHMARKS.md (text after its end marker is kept). About 10
## minutes on two cores; `make bench BENCH_FLAGS=--quick` runs the smoke size.
BENCH_OUT   ?= benchmarks
BENCH_FLAGS ?=
bench:
	@mkdir -p $(BENCH_OUT)
	$(GO) test -run '^$$' -bench . -benchmem ./... > $(BENCH_OUT)/go-bench.txt || { cat $(BENCH_OUT)/go-bench.txt; exit 1; }
	@cat $(BENCH_OUT)/go-bench.txt
	$(GO) run ./cmd/deq bench --out $(BENCH_OUT) --markdown BENCHMARKS.md $(BENCH_FLAGS)

clean:
	$(GO) clean -testcache
