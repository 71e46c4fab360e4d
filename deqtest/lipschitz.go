package deqtest

import (
	"fmt"
	"math"
	"strings"

	"github.com/deqgo/deq/solver"
)

// lipschitz is CheckLipschitz's body.
func (k *kit) lipschitz() {
	k.t.Helper()
	norms := k.provenNorms()
	if len(norms) == 0 {
		return
	}
	type mapping struct {
		name    string
		sampled bool
	}
	maps := []mapping{{"exact map", false}}
	if k.ev.Model() == solver.SamplewiseLipschitz {
		maps = append(maps, mapping{fmt.Sprintf("sampled map (Size %d)", k.o.SampleSize), true})
	}
	gamma := k.c.Gamma()
	worst := make([][]float64, len(maps))
	for i := range worst {
		worst[i] = make([]float64, len(norms))
	}
	n := k.ev.Len()
	per := k.c.Shape().HiddenLen()
	f1 := make([]float64, n)
	f2 := make([]float64, n)
	df := make([]float64, n)
	dz := make([]float64, n)
	for p := range k.o.Points {
		_, z1, err := k.point(p)
		if err != nil {
			k.errorf("point %d: %v", p, err)
			return
		}
		for mi, m := range maps {
			s := k.exact()
			eval := func(dst, z []float64) error {
				if m.sampled {
					_, err := k.ev.Eval(dst, z, s)
					return err
				}
				return k.ev.EvalExact(dst, z)
			}
			// pair measures one pair's per-example ratios in every norm.
			pair := func(kind string, z2 []float64) error {
				if err := eval(f1, z1); err != nil {
					return err
				}
				if err := eval(f2, z2); err != nil {
					return err
				}
				for i := range df {
					df[i] = f1[i] - f2[i]
					dz[i] = z1[i] - z2[i]
				}
				for ni, pn := range norms {
					for b := range k.o.Batch {
						num := pn.example.Norm(df[b*per : (b+1)*per])
						den := pn.example.Norm(dz[b*per : (b+1)*per])
						if den == 0 {
							continue
						}
						r := num / den
						worst[mi][ni] = math.Max(worst[mi][ni], r)
						if !(r <= gamma*(1+1e-9)) {
							k.mismatch("norm %s, %s, point %d, %s pair, example %d: ‖f(z₁) − f(z₂)‖/‖z₁ − z₂‖ = %.8g/%.4g = %.8g exceeds Gamma() = %v by a factor %.6g",
								pn.name, m.name, p, kind, b, num, den, r, gamma, r/gamma)
						}
					}
				}
				return nil
			}
			for range k.o.Pairs {
				if m.sampled {
					s = solver.Sample{Seed: k.rng.Uint64(), Size: k.o.SampleSize}
				}
				delta := math.Pow(10, -3*k.rng.Float64())
				z2 := k.normal(n, delta)
				for i := range z2 {
					z2[i] += z1[i]
				}
				if err := pair("random", z2); err != nil {
					k.errorf("%s: %v", m.name, err)
					return
				}
			}
			if m.sampled {
				s = solver.Sample{Seed: k.rng.Uint64(), Size: k.o.SampleSize}
			}
			v := k.normal(n, 1)
			z2 := make([]float64, n)
			const step = 1e-3
			for range k.o.Ascent {
				scale(v, 1/math.Sqrt(dot(v, v)))
				for i := range z2 {
					z2[i] = z1[i] + step*v[i]
				}
				if err := pair("adversarial", z2); err != nil {
					k.errorf("%s: %v", m.name, err)
					return
				}
				// df = f(z₁) − f(z₂) ≈ −step·Jv; v ← Jᵀ(Jv) up to sign and scale.
				if _, err := k.ev.VJPHidden(v, z1, df, s); err != nil {
					k.errorf("VJPHidden: %v", err)
					return
				}
				if dot(v, v) == 0 {
					break
				}
			}
		}
	}
	for mi, m := range maps {
		var b strings.Builder
		for ni, pn := range norms {
			fmt.Fprintf(&b, " %s %.6g", pn.name, worst[mi][ni])
		}
		k.t.Logf("deqtest.CheckLipschitz(%T): %s, Gamma() = %v, largest ratios:%s", k.c, m.name, gamma, b.String())
	}
}

func scale(v []float64, a float64) {
	for i := range v {
		v[i] *= a
	}
}
