package solver

import "math"

// This file holds the run of VR-GHAL with PaperConstants: the reference
// paper's algorithm, epoch by epoch, with the sizes of vrghal_schedule.go.
// Its state and inner step are shared with the tuned run (tunedRun).

// vrRun is the state of one VR-GHAL run. All buffers are allocated once,
// except the bucket means, which grow with the epochs' bucket counts.
type vrRun struct {
	e     *Env
	c     vrConfig
	norm  Norm
	det   bool // deterministic model: exact evaluations, T(y_{j−1}) reused
	multi bool // multi-query model: one Sample at both points of a difference

	xhat, t0    []float64 // x̂ of the last completed epoch and T̃_{k,0}
	y0, tt      []float64 // anchor y₀ and running estimate T̃_j
	yPrev, yCur []float64 // y_{j−1}, y_j
	tau1, tau2  []float64 // oracle outputs; tau2 holds T(y_{j−1}) when det
	acc         []float64 // sum of clipped differences
	means       [][]float64
	momWork     []float64
	residual    float64 // R̃ of xhat
}

func newVRRun(e *Env, c vrConfig) *vrRun {
	n := e.Len()
	buf := make([]float64, 9*n)
	next := func() []float64 {
		s := buf[:n:n]
		buf = buf[n:]
		return s
	}
	return &vrRun{
		e: e, c: c, norm: e.Norm(),
		det:   c.model == Deterministic,
		multi: c.multiQuery(),
		xhat:  next(), t0: next(), y0: next(), tt: next(), yPrev: next(), yCur: next(),
		tau1: next(), tau2: next(), acc: next(),
	}
}

// fits reports whether need more requested samples fit in the budget.
func (r *vrRun) fits(need float64) bool {
	return need <= maxDraw && r.e.CanDraw(int64(need))
}

func (r *vrRun) run() error {
	e := r.e
	e.KeepLast()
	copy(r.xhat, e.X0())
	m0, err := r.c.momPlan(0)
	if err != nil {
		return e.Stop(SampleLimit, err)
	}
	if !r.fits(m0.samples()) {
		return e.Stop(SampleLimit, nil)
	}
	if err := r.mome(r.t0, r.xhat, m0); err != nil {
		return err
	}
	if err := r.record(m0); err != nil {
		return err
	}
	for k := 1; ; k++ {
		p, err := r.c.epochPlan(k, r.residual)
		if err != nil {
			return e.Stop(SampleLimit, err)
		}
		if !r.fits(p.samples()) {
			return e.Stop(SampleLimit, nil)
		}
		if err := r.epoch(&p); err != nil {
			return err
		}
		if err := r.record(p.mom); err != nil {
			return err
		}
	}
}

// record computes R̃ = ‖T̃_{k,0} − x̂_k‖ and records the completed epoch
// with its rigorous bound (see bound).
func (r *vrRun) record(m vrMoM) error {
	r.residual = r.e.Dist(r.t0, r.xhat)
	r.e.SuggestCertSamples(m.size)
	return r.e.RecordBound(r.xhat, r.residual, r.bound(m))
}

// bound returns a bound on ‖T(x̂_k) − x̂_k‖ that holds on the run's event:
// R̃ itself for a deterministic oracle, R̃ + 3σ√(3κ/n) when the oracle
// declares a variance bound σ² (or an almost-sure bound b, σ² ≤ b²) at x̂_k,
// n being the bucket size of the median of means m, and +Inf otherwise.
func (r *vrRun) bound(m vrMoM) float64 {
	o := r.e.Oracle()
	if o.Model() == Deterministic {
		return r.residual
	}
	v := declaredVariance(o, r.xhat, r.norm)
	if math.IsInf(v, 1) {
		return v
	}
	return r.residual + 3*math.Sqrt(3*r.norm.Kappa()*v/float64(m.size))
}

// epoch runs epoch p.k from x̂_{k−1} = r.xhat with T̃_{k−1,0} = r.t0 and
// leaves x̂_k in r.xhat and T̃_{k,0} in r.t0. It allocates nothing once the
// bucket storage is large enough.
func (r *vrRun) epoch(p *vrEpoch) error {
	copy(r.y0, r.xhat)
	copy(r.tt, r.t0)
	copy(r.yPrev, r.y0)
	if r.det {
		copy(r.tau2, r.t0) // T(y₀), exact
	}
	lam := p.lambda
	for j := 1; ; j++ {
		for i, a := range r.y0 {
			r.yCur[i] = lam*a + (1-lam)*r.tt[i]
		}
		if j == p.steps {
			break
		}
		if err := r.step(p, r.c.gamma*r.e.Dist(r.yCur, r.yPrev)); err != nil {
			return err
		}
		r.yPrev, r.yCur = r.yCur, r.yPrev
	}
	if err := r.mome(r.t0, r.yCur, p.mom); err != nil {
		return err
	}
	r.xhat, r.yCur = r.yCur, r.xhat
	return nil
}

// step updates T̃_j = T̃_{j−1} + (1/n_k)Σ_ℓ Cl(Δ^{(ℓ)}) for y_j = r.yCur and
// y_{j−1} = r.yPrev, clipping at radius = γ̄‖y_j − y_{j−1}‖.
func (r *vrRun) step(p *vrEpoch, radius float64) error {
	e := r.e
	if r.det {
		if err := e.Eval(r.tau1, r.yCur, Sample{Size: 1}); err != nil {
			return err
		}
		subInto(r.acc, r.tau1, r.tau2)
		clipDifference(r.acc, r.acc, radius, r.norm)
		for i, v := range r.acc {
			r.tt[i] += v
		}
		r.tau1, r.tau2 = r.tau2, r.tau1 // tau2 = T(y_j) for the next step
		return nil
	}
	clear(r.acc)
	for range p.copies {
		s1 := Sample{Seed: e.Seed(), Size: p.batch}
		s2 := s1
		if !r.multi {
			s2.Seed = e.Seed()
		}
		if err := e.Eval(r.tau1, r.yCur, s1); err != nil {
			return err
		}
		if err := e.Eval(r.tau2, r.yPrev, s2); err != nil {
			return err
		}
		subInto(r.tau1, r.tau1, r.tau2)
		clipDifference(r.tau1, r.tau1, radius, r.norm)
		for i, v := range r.tau1 {
			r.acc[i] += v
		}
	}
	inv := 1 / float64(p.copies)
	for i, v := range r.acc {
		r.tt[i] += inv * v
	}
	return nil
}

// mome writes into dst the median-of-means estimate of T(x) sized by m:
// m.buckets independent oracle calls of m.size unit samples, combined by
// medianOfMeans.
func (r *vrRun) mome(dst, x []float64, m vrMoM) error {
	r.growBuckets(m.buckets)
	means := r.means[:m.buckets]
	for _, b := range means {
		if err := r.e.Eval(b, x, Sample{Seed: r.e.Seed(), Size: m.size}); err != nil {
			return err
		}
	}
	medianOfMeans(dst, means, r.norm, r.momWork)
	return nil
}

// growBuckets makes room for k bucket means, allocating only the missing
// ones (the count grows by about 18 ln(1/β) per epoch).
func (r *vrRun) growBuckets(k int) {
	if k <= len(r.means) {
		return
	}
	n := r.e.Len()
	for len(r.means) < k {
		r.means = append(r.means, make([]float64, n))
	}
	r.momWork = make([]float64, medianOfMeansWork(k, n))
}
