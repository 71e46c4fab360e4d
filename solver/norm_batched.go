package solver

import "math"

// Aggregate says how Batched combines per-example norms.
type Aggregate int

const (
	// AggMax takes the largest per-example norm: the norm of the product space
	// ℓ∞(E₁, …, E_B). It is the default, so a batch tolerance holds for every
	// example.
	AggMax Aggregate = iota
	// AggMean takes the mean of per-example norms (ℓ1 over examples, scaled);
	// useful for reporting, not for certificates, since the space is not smooth.
	AggMean
)

// Batched is the norm of a batch of Examples independent points, each of
// dimension Example.Len(), stored one after another. Its value is the
// aggregate (by default the maximum) of the per-example norms, and Each
// reports them one by one.
//
// Its witness (see Norm), for n examples with AggMax:
//
//   - for an Example of this package (LP, LInf, Schatten of k×c matrices):
//     the batch norm is the ℓ∞ over examples of the ℓp norms of their
//     values (entries, or the k = min{k, c} singular values), that is an ℓp
//     norm of all N = n·d values held in blocks. The witness is λ·ℓr of all
//     N values (for Schatten: λ times the Schatten-r norm of the
//     block-diagonal matrix of the examples, which restricts the
//     (r − 1)-smooth Schatten-r norm to a subspace), with B = r − 1 and
//     ‖x‖ ≤ ‖x‖₊ ≤ n^{1/r}·d^{|1/r − 1/p|}‖x‖ (λ = d^{1/p − 1/r} when
//     r > p, else 1), r chosen among 2, p and 2 ln N for the smallest κ;
//     so κ ≤ e·(2 ln N − 1) whatever p, as for LInf of dimension N;
//   - for any other Example with witness (E₊, B_E, C_E): the ℓ2 sum of the
//     examples' witnesses, (Σ‖x_i‖₊²)^{1/2}, whose square is B_E-smooth
//     (a sum of B_E-smooth squares), with C = √n·C_E, so κ = n·κ_E.
//
// With AggMean the value is at most the AggMax value and at least 1/n of
// it, so the same witness serves with C multiplied by n. A batch of one
// example reports the example's own constants.
type Batched struct {
	Example  Norm
	Examples int
	Agg      Aggregate
}

var _ Norm = (*Batched)(nil)

// NewBatched returns the max-aggregated norm of n examples measured by ex. It
// returns an error if ex is nil, n < 1, or n·ex.Len() is not a positive int.
func NewBatched(ex Norm, n int) (*Batched, error) {
	if ex == nil {
		return nil, normErr("", "Batched example norm is nil")
	}
	if n < 1 {
		return nil, normErr("", "Batched examples = %d must be positive", n)
	}
	if d := ex.Len(); d < 1 || n > math.MaxInt/d {
		return nil, normErr("", "Batched of %d examples of dimension %d: dimension not positive or overflowing", n, d)
	}
	return &Batched{Example: ex, Examples: n}, nil
}

// Len implements Norm. It is 0 for a Batched without an Example norm, which
// Solve rejects.
func (b *Batched) Len() int {
	if b.Example == nil {
		return 0
	}
	return b.Example.Len() * b.Examples
}

// Norm implements Norm.
func (b *Batched) Norm(x []float64) float64 {
	checkLen(b.Len(), x)
	d := b.Example.Len()
	agg := 0.0
	for i := 0; i < b.Examples; i++ {
		v := b.Example.Norm(x[i*d : (i+1)*d])
		if math.IsNaN(v) {
			return v
		}
		switch b.Agg {
		case AggMean:
			agg += v / float64(b.Examples)
		default:
			agg = math.Max(agg, v)
		}
	}
	return agg
}

// Each writes the per-example norms of x into dst, which must have length
// Examples, and returns it. A nil dst is allocated.
func (b *Batched) Each(dst, x []float64) []float64 {
	checkLen(b.Len(), x)
	if dst == nil {
		dst = make([]float64, b.Examples)
	}
	if len(dst) != b.Examples {
		panic("solver: Batched.Each destination length mismatch")
	}
	d := b.Example.Len()
	for i := range dst {
		dst[i] = b.Example.Norm(x[i*d : (i+1)*d])
	}
	return dst
}

// Kappa implements Norm.
func (b *Batched) Kappa() float64 { return b.witness().kappa() }

// C implements Norm.
func (b *Batched) C() float64 { return b.witness().c }

func (b *Batched) witness() witness {
	var w witness
	switch {
	case b.Examples == 1:
		w = witnessOf(b.Example)
	default:
		if p, d, ok := lpFamily(b.Example); ok {
			w = lrWitness(p, d, b.Examples)
		} else {
			e := witnessOf(b.Example)
			w = witness{b: e.b, c: math.Sqrt(float64(b.Examples)) * e.c}
		}
	}
	if b.Agg == AggMean && b.Examples > 1 {
		w.c *= float64(b.Examples)
	}
	return w
}

// Clone implements Norm.
func (b *Batched) Clone() Norm {
	return &Batched{Example: b.Example.Clone(), Examples: b.Examples, Agg: b.Agg}
}

// String implements Norm. It names the per-example norm.
func (b *Batched) String() string { return b.Example.String() }
