package layers

import "math"

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
		mean := 0.0
		for _, v := range xs {
			mean += v
		}
		mean /= float64(n)
		vr := 0.0
		for _, v := range xs {
			d := v - mean
			vr += d * d
		}
		vr /= float64(n)
		r := 1 / math.Sqrt(vr+convNormEps)
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

// backward writes into dx the cotangent of the input for the cotangent dy
// of the output (dx may be dy) and adds the scale's and shift's gradients
// into dscale and dshift unless they are nil.
func (g groupNorm) backward(dx, dy, xhat, rstd, scale, dscale, dshift []float64) {
	if dscale != nil {
		for ch := range g.c {
			s, t := 0.0, 0.0
			hs := xhat[ch*g.hw : (ch+1)*g.hw]
			for i, v := range dy[ch*g.hw : (ch+1)*g.hw] {
				s += v * hs[i]
				t += v
			}
			dscale[ch] += s
			dshift[ch] += t
		}
	}
	n := g.c / g.groups * g.hw
	cg := g.c / g.groups
	for k := range g.groups {
		// d x̂ = dy·scale; dx = r(d x̂ − mean(d x̂) − x̂·mean(d x̂·x̂)).
		m1, m2 := 0.0, 0.0
		for ch := k * cg; ch < (k+1)*cg; ch++ {
			a := scale[ch]
			hs := xhat[ch*g.hw : (ch+1)*g.hw]
			for i, v := range dy[ch*g.hw : (ch+1)*g.hw] {
				d := a * v
				m1 += d
				m2 += d * hs[i]
			}
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
