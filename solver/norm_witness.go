package solver

import "math"

// witness is a smooth witness (‖·‖₊, B, C) of a norm ‖·‖ in the sense of
// the reference paper: ‖x‖ ≤ ‖x‖₊ ≤ C‖x‖ and ‖·‖₊² is B-smooth. For the
// norms of this package ‖·‖₊ = scale·ℓr of the norm's values (entries, or
// singular values of each example, all examples of a batch together); r is
// zero for a witness known only through its constants.
type witness struct {
	r, scale float64
	b, c     float64
}

func (w witness) kappa() float64 { return w.b * w.c * w.c }

// witnessOf returns the witness of n: its own for the norms of this
// package, and B = κ/C² from Kappa and C for any other.
func witnessOf(n Norm) witness {
	switch v := n.(type) {
	case LP:
		return v.witness()
	case LInf:
		return v.witness()
	case *Schatten:
		return v.witness()
	case *Batched:
		return v.witness()
	}
	c := n.C()
	return witness{b: n.Kappa() / (c * c), c: c}
}

// lpFamily reports whether n is the ℓp norm of d values (entries, or
// singular values for Schatten) and returns p and d.
func lpFamily(n Norm) (p float64, d int, ok bool) {
	switch v := n.(type) {
	case LP:
		return v.p, v.d, true
	case LInf:
		return math.Inf(1), v.d, true
	case *Schatten:
		return v.p, min(v.rows, v.cols), true
	}
	return 0, 0, false
}

// lrWitness returns the witness of the norm max_i ‖x_i‖_p over n groups
// x_i of d values each (n = 1: the ℓp norm of d values), 2 ≤ p ≤ ∞: the
// scaled ℓr norm of all N = n·d values with B = r − 1, for the r among 2, p
// (if finite) and 2 ln N (if above 2) that gives the smallest κ = B·C².
//
// For one group x_i: ‖x_i‖_p ≤ ‖x_i‖_r when r ≤ p, and
// ‖x_i‖_p ≤ d^{1/p − 1/r}‖x_i‖_r when r > p (Hölder), so with λ = 1 or
// d^{1/p − 1/r} the witness λ‖x‖_r dominates every group's norm, hence the
// maximum; and λ‖x‖_r ≤ λ·n^{1/r}·max_i ‖x_i‖_r ≤ n^{1/r}·d^{|1/r − 1/p|}
// max_i ‖x_i‖_p, which is C.
func lrWitness(p float64, d, n int) witness {
	total := float64(n) * float64(d)
	var buf [3]float64 // on the stack: Kappa and C allocate nothing
	cands := append(buf[:0], 2)
	if !math.IsInf(p, 1) && p > 2 {
		cands = append(cands, p)
	}
	if r := 2 * math.Log(total); r > 2 {
		cands = append(cands, r)
	}
	best := witness{b: math.Inf(1), c: 1}
	for _, r := range cands {
		w := witness{r: r, scale: 1, b: r - 1}
		inv := 1 / p // 0 for p = ∞
		if r <= p {
			w.c = math.Pow(float64(n), 1/r) * math.Pow(float64(d), 1/r-inv)
		} else {
			w.scale = math.Pow(float64(d), inv-1/r)
			w.c = math.Pow(float64(n), 1/r) * w.scale
		}
		if w.kappa() < best.kappa() {
			best = w
		}
	}
	return best
}
