package deqtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// maxReports is the number of mismatches a check reports one by one before
// it summarises the rest.
const maxReports = 5

// kit is the state shared by one check's run.
type kit struct {
	t     testing.TB
	check string // the check's name, prefixed to its messages
	c     layers.Cell
	o     Options
	ev    layers.Evaluator
	rng   *rand.Rand
	shown int // mismatches reported so far
	more  int // mismatches not reported one by one
}

// newKit validates the options and builds the evaluator; it reports an
// error and returns nil if either fails.
func newKit(t testing.TB, check string, c layers.Cell, o *Options, salt uint64) *kit {
	t.Helper()
	if c == nil {
		t.Errorf("deqtest.%s: nil cell", check)
		return nil
	}
	opts, err := o.withDefaults()
	if err != nil {
		t.Errorf("deqtest.%s: %v", check, err)
		return nil
	}
	ev, err := c.Evaluator(opts.Batch)
	if err != nil {
		t.Errorf("deqtest.%s: Evaluator(%d): %v", check, opts.Batch, err)
		return nil
	}
	return &kit{t: t, check: check, c: c, o: opts, ev: ev, rng: rand.New(rand.NewPCG(opts.Seed, salt))}
}

// errorf reports a failure prefixed by the check's name.
func (k *kit) errorf(format string, args ...any) {
	k.t.Helper()
	k.t.Errorf("deqtest.%s(%T): %s", k.check, k.c, fmt.Sprintf(format, args...))
}

// mismatch reports one of possibly many mismatches, the first maxReports of
// them in full.
func (k *kit) mismatch(format string, args ...any) {
	k.t.Helper()
	if k.shown < maxReports {
		k.shown++
		k.errorf(format, args...)
		return
	}
	k.more++
}

// summary reports how many mismatches were not shown.
func (k *kit) summary() {
	k.t.Helper()
	if k.more > 0 {
		k.errorf("and %d more mismatches", k.more)
	}
}

// point draws a random input and state for point i and sets the input. Odd
// points get small inputs (standard deviation 0.1), and the states' scale
// cycles through 1, 0.1 and 3, so that smooth activations are seen both
// near their linear regime and saturating.
func (k *kit) point(i int) (x, z []float64, err error) {
	sh := k.c.Shape()
	xs := 1.0
	if i%2 == 1 {
		xs = 0.1
	}
	zs := [...]float64{1, 0.1, 3}[i%3]
	x = k.normal(k.o.Batch*sh.InputLen(), xs)
	z = k.normal(k.ev.Len(), zs)
	if err := k.ev.SetInput(x); err != nil {
		return nil, nil, fmt.Errorf("SetInput: %w", err)
	}
	return x, z, nil
}

// normal returns n independent N(0, sd²) values.
func (k *kit) normal(n int, sd float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = sd * k.rng.NormFloat64()
	}
	return v
}

// exact returns the Sample that makes Eval and VJPHidden use the exact map.
func (k *kit) exact() solver.Sample { return solver.Sample{Size: max(k.ev.Terms(), 1)} }

// provenNorm is a candidate norm in which the cell proves its bound.
type provenNorm struct {
	name    string
	example solver.Norm
	batched *solver.Batched
}

// provenNorms parses Options.Norms for the cell's shape and returns those
// in which Cell.Proven holds. A name that does not parse is an error.
func (k *kit) provenNorms() []provenNorm {
	k.t.Helper()
	sh := k.c.Shape()
	var out []provenNorm
	for _, name := range k.o.Norms {
		ex, err := solver.ParseNorm(name, sh.Rows, sh.Hidden)
		if err != nil {
			k.errorf("Options.Norms: %v", err)
			continue
		}
		b, err := solver.NewBatched(ex, k.o.Batch)
		if err != nil {
			k.errorf("Options.Norms: %v", err)
			continue
		}
		if k.c.Proven(b) {
			out = append(out, provenNorm{name: name, example: ex, batched: b})
		}
	}
	if len(out) == 0 {
		k.t.Logf("deqtest.%s(%T): the cell proves its bound in none of %v: nothing to check", k.check, k.c, k.o.Norms)
	}
	return out
}

// saved is a copy of a cell's parameters and gradients.
type saved struct {
	ps          []*layers.Param
	data, grads [][]float64
}

// save copies the parameters and gradients of c.
func save(c layers.Cell) saved {
	s := saved{ps: c.Params()}
	for _, p := range s.ps {
		s.data = append(s.data, slices.Clone(p.Data()))
		s.grads = append(s.grads, slices.Clone(p.GradData()))
	}
	return s
}

// restore writes the saved values back.
func (s saved) restore() {
	for i, p := range s.ps {
		copy(p.Data(), s.data[i])
		copy(p.GradData(), s.grads[i])
	}
}

// where names coordinate i of a batch of examples of length per.
func where(i, per int) string {
	return fmt.Sprintf("coordinate %d (example %d, entry %d)", i, i/per, i%per)
}
