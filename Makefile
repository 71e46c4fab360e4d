# deq — deep equilibrium models with certified stochastic fixed-point solvers.
GO      ?= go
GOFILES  = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go')

.PHONY: all build test test-race lint bench fuzz clean

all: lint test

build:
	$(GO) build ./...

## test: the project's test suite (what CI runs): every test, then the
## race detector over the short tests.
test: build
	$(GO) test -count=1 ./...
	@$(MAKE) --no-print-directory test-race

## test-race: go test -race -short over every package. The race detector
## needs cgo and a C compiler; without them it is skipped with a note, except
## under CI (CI=true), where that is an error.
test-race:
	@if [ "$$($(GO) env CGO_ENABLED)" = 1 ]; then \
		echo "$(GO) test -race -short -count=1 ./..."; \
		$(GO) test -race -short -count=1 ./...; \
	else \
		echo "test-race: the race detector needs cgo and a C compiler (CC=$$($(GO) env CC))" >&2; \
		if [ -n "$$CI" ]; then exit 1; fi; \
		echo "test-race: skipped" >&2; \
	fi

## fuzz: each fuzz target for FUZZTIME (one target per go test run).
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseNorm$$' -fuzztime $(FUZZTIME) ./solver/
	$(GO) test -run '^$$' -fuzz '^FuzzSolveFlags$$' -fuzztime $(FUZZTIME) ./cmd/deq/
	$(GO) test -run '^$$' -fuzz '^FuzzReadIDX$$' -fuzztime $(FUZZTIME) ./datasets/

## lint: gofmt check and go vet.
lint:
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## bench: Go microbenchmarks with allocation counts.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	$(GO) clean -testcache
