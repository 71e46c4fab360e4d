package layers

import (
	"math"

	"gonum.org/v1/gonum/floats"
)

// convNormEps is the ε added to a group's variance by GroupNorm.
const convNormEps = 1e-5

// groupNorm normalises one C×HW image in groups of C/groups consecutive
// channels (each group a contiguous block of the CHW layout): every group is
// shifted to mean zero and scaled to variance one (with ε), then channel c
// is scaled by scale[c] and shifted by shift[c].
type groupNorm struct {
	c, hw, groups int
}

// forward writes the normalised image into y and the standardised values
// x̂ into xhat (for backward), and the groups' 1/√(var + ε) into rstd.
// y may be x.
func (g groupNorm) forward(y, xhat, rstd, x, scale, shift []float64) {
	n := g.c / g.groups * g.hw
	cg := g.c / g.groups
	for k := range g.groups {
		xs := x[k*n : (k+1)*n]
		mean := floats.Sum(xs) / float64(n)
		r := 1 / math.Sqrt(sumSqDev(xs, mean)/float64(n)+convNormEps)
		rstd[k] = r
		for ch := k * cg; ch < (k+1)*cg; ch++ {
			a, b := scale[ch], shift[ch]
			xs := x[ch*g.hw : (ch+1)*g.hw]
			hs, ys := xhat[ch*g.hw:(ch+1)*g.hw], y[ch*g.hw:(ch+1)*g.hw]
			for i, v := range xs {
				h := (v - mean) * r
				hs[i] = h
				ys[i] = a*h + b
			}
		}
	}
}

// sumSqDev returns Σ (x_i − m)², with four partial sums so that the
// additions do not wait on one another.
func sumSqDev(x []float64, m float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		d0, d1, d2, d3 := x[i]-m, x[i+1]-m, x[i+2]-m, x[i+3]-m
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(x); i++ {
		d := x[i] - m
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}

// backward writes into dx the cotangent of the input for the cotangent dy
// of the output (dx may be dy) and adds the scale's and shift's gradients
// into dscale and dshift unless they are nil.
func (g groupNorm) backward(dx, dy, xhat, rstd, scale, dscale, dshift []float64) {
	n := g.c / g.groups * g.hw
	cg := g.c / g.groups
	for k := range g.groups {
		// d x̂ = dy·scale; dx = r(d x̂ − mean(d x̂) − x̂·mean(d x̂·x̂)).
		// Per channel, Σ dy·x̂ and Σ dy are also the scale's and shift's
		// gradients.
		m1, m2 := 0.0, 0.0
		for ch := k * cg; ch < (k+1)*cg; ch++ {
			a := scale[ch]
			ys := dy[ch*g.hw : (ch+1)*g.hw]
			s, t := floats.Dot(ys, xhat[ch*g.hw:(ch+1)*g.hw]), floats.Sum(ys)
			if dscale != nil {
				dscale[ch] += s
				dshift[ch] += t
			}
			m1 += a * t
			m2 += a * s
		}
		m1 /= float64(n)
		m2 /= float64(n)
		r := rstd[k]
		for ch := k * cg; ch < (k+1)*cg; ch++ {
			a := scale[ch]
			hs := xhat[ch*g.hw : (ch+1)*g.hw]
			ds := dx[ch*g.hw : (ch+1)*g.hw]
			for i, v := range dy[ch*g.hw : (ch+1)*g.hw] {
				ds[i] = r * (a*v - m1 - hs[i]*m2)
			}
		}
	}
}
