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

## bench: Go microbenchmarks with allocation counts.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	$(GO) clean -testcache
