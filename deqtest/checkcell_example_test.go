package deqtest_test

import (
	"fmt"
	"log"
	"slices"
	"strings"
	"testing"

	"github.com/deqgo/deq/deqtest"
	"github.com/deqgo/deq/layers"
)

// failures is a testing.TB that collects the names of the checks that
// report failures, instead of failing a test. In a go test, pass the
// test's *testing.T to the checks instead.
type failures struct {
	testing.TB // the methods the checks do not call are left nil
	checks     []string
}

func (f *failures) Helper()             {}
func (f *failures) Logf(string, ...any) {}
func (f *failures) Fatal(args ...any)   { f.Errorf("%s", fmt.Sprint(args...)) }
func (f *failures) Errorf(format string, args ...any) {
	// Every message starts "deqtest.CheckName(cell type): ...".
	name, _, _ := strings.Cut(strings.TrimPrefix(fmt.Sprintf(format, args...), "deqtest."), "(")
	if !slices.Contains(f.checks, name) {
		f.checks = append(f.checks, name)
	}
}

// understated claims half its cell's Lipschitz bound.
type understated struct{ layers.Cell }

func (c understated) Gamma() float64 { return c.Cell.Gamma() / 2 }

// Check a stochastic cell, a mixture of 64 dense experts, with every check
// of the package; then check the same cell claiming half its Lipschitz
// bound, which CheckLipschitz catches.
func ExampleCheckCell() {
	cell, err := layers.NewExperts(layers.ExpertsConfig{
		Hidden: 4, Input: 3, Experts: 64, Activation: layers.Tanh,
		Lipschitz: layers.Constraint{Gamma: 0.5}, Seed: 1,
	})
	if err != nil {
		log.Fatal(err)
	}
	opts := &deqtest.Options{Seed: 1}

	f := &failures{}
	deqtest.CheckCell(f, cell, opts)
	fmt.Println("experts cell, failed checks:", f.checks)

	f = &failures{}
	deqtest.CheckCell(f, understated{cell}, opts)
	fmt.Println("understated bound, failed checks:", f.checks)
	// Output:
	// experts cell, failed checks: []
	// understated bound, failed checks: [CheckLipschitz]
}
