package bench

import (
	"context"
	"errors"
	"math"

	"github.com/deqgo/deq/solver"
)

// certifiedName names the certified-count row of a method.
func certifiedName(method string) string { return method + " (certified)" }

// declScaled is a scaledOracle that also forwards the oracle's noise
// declarations in the new units: b_c(x) = c·b(x/c), σ²_c(x) = c²·σ²(x/c)
// (+Inf when the oracle declares none), so that certificates and VR-GHAL's
// estimators see what the problem knows.
type declScaled struct {
	*scaledOracle
}

var (
	_ solver.NoiseBound           = declScaled{}
	_ solver.VarianceBound        = declScaled{}
	_ solver.CoordinateNoiseBound = declScaled{}
	_ solver.FiniteSum            = declScaledSum{}
)

// CoordinateNoise implements solver.CoordinateNoiseBound: b_c(x) = c·b(x/c),
// v_c(x) = c²·v(x/c) coordinatewise, false when the oracle declares none.
func (d declScaled) CoordinateNoise(b, v, x []float64) bool {
	cn, ok := d.o.(solver.CoordinateNoiseBound)
	if !ok {
		return false
	}
	d.unscale(x)
	if !cn.CoordinateNoise(b, v, d.buf) {
		return false
	}
	for i := range b {
		b[i] *= d.c
		v[i] *= d.c * d.c
	}
	return true
}

// NoiseBound implements solver.NoiseBound.
func (d declScaled) NoiseBound(x []float64, norm solver.Norm) float64 {
	nb, ok := d.o.(solver.NoiseBound)
	if !ok {
		return math.Inf(1)
	}
	d.unscale(x)
	return d.c * nb.NoiseBound(d.buf, norm)
}

// NoiseVariance implements solver.VarianceBound.
func (d declScaled) NoiseVariance(x []float64, norm solver.Norm) float64 {
	vb, ok := d.o.(solver.VarianceBound)
	if !ok {
		return math.Inf(1)
	}
	d.unscale(x)
	return d.c * d.c * vb.NoiseVariance(d.buf, norm)
}

// declScaledSum is declScaled for a finite-sum oracle.
type declScaledSum struct {
	declScaled
	terms int
}

// Terms implements solver.FiniteSum.
func (d declScaledSum) Terms() int { return d.terms }

// declaring returns o with the declarations of the oracle it scales.
func declaring(o *scaledOracle) exactOracle {
	d := declScaled{o}
	if fs, ok := o.o.(solver.FiniteSum); ok {
		return declScaledSum{declScaled: d, terms: fs.Terms()}
	}
	return d
}

// certRecorder counts samples to a certified ε, the same way for every
// method: at each recorded point x whose true residual is at most ε (a
// certificate claiming ≤ ε at a point whose residual exceeds ε would be one
// of its failures, not a success), it certifies x with
// solver.CertifyRadius at radius ε/2, fresh samples, δ = Config.Delta and
// one oracle call (certCalls); the count is the method's samples so far
// plus that certificate's, the first time a rigorous certificate's Bound is
// at most ε. Certificates that fail are not charged (in the baselines'
// favour), and VR-GHAL's own rigorous bound (Status Success with Tol = ε)
// counts its samples alone. The run stops once its target is certified.
type certRecorder struct {
	ctx     context.Context
	hit     *hitRecorder
	prob    solver.Problem
	s       *settings
	seed    uint64
	anytime bool
	target  int
	cert    []float64
	checks  uint64
	err     error
	// ownBound marks a method whose own rigorous bound can stop it with
	// Success; graced is set once the run went on past its certification.
	ownBound, graced bool
}

var _ solver.PointRecorder = (*certRecorder)(nil)

// certCalls is the number of oracle calls of the bench's certificate: one,
// so that every certificate is a single call of N unit samples (the
// bounded-noise mean, or under a variance declaration alone one Chebyshev
// bucket, p = δ: at the bench's δ = 0.05 the cheapest plan of
// solver.CertifyRadius but for the truncated mean, 18.1 against 20
// variances κσ²/(ε/2)²; below δ ≈ 0.0028 a median of means would be
// cheaper, 351 against 1000 at 1e-3; a finite sum is still certified
// exactly, and an undeclared oracle's estimate, no certificate, uses its
// minimum of three calls).
//
// Why not the truncated mean, although it needs a tenth fewer samples:
// its N samples come in up to 16384 calls of a few samples each, which an
// oracle must draw one by one, where one call of N samples may be drawn in
// O(1) per coordinate (affine-t sums 256 Student-t draws and a Gaussian
// for the rest); and the bench certifies every recorded point whose true
// residual is at most ε until one certificate succeeds, most of them
// failing at points whose residual lies between ε/2 and ε (one seed of
// affine-t, ε = 1e-3: 28 certificates for minibatch KM and 94 for
// PAGE-Halpern, one success each). Which of those would succeed cannot be
// told before drawing: a point of residual r certifies when its estimate
// errs by at least r + ρ − ε towards x, an event of positive probability
// for every r ≤ ε (ρ the rule's radius), so skipping attempts would change
// the counts. With the truncated mean the section's affine-t runs spent
// 97% of their time drawing the certificates' Student-t samples (CPU
// profile): three seeds of affine-t alone took 387 s, as long as the whole
// section with twenty seeds and one call (389 s, load 9–14, at commit
// 0da1ad5, before the bucket search was made cheap; 101 s after). One call is
// the same rule for every method, so the accounting stays identical across
// methods; the solver's own choice (the truncated mean at δ ≤ 0.05 when it
// is cheaper) serves VR-GHAL's estimates and Solve's certificates.
const certCalls = 1

func newCertRecorder(ctx context.Context, hit *hitRecorder, p solver.Problem, s *settings, t task, ms methodSpec) *certRecorder {
	r := &certRecorder{ctx: ctx, hit: hit, prob: p, s: s, seed: deriveSeed(s.Seed, 3, uint64(t.seed)), anytime: !ms.perEps, target: t.eps, cert: make([]float64, len(s.Eps)), ownBound: ms.vr}
	for i := range r.cert {
		r.cert[i] = math.Inf(1)
	}
	return r
}

// done reports whether the target accuracy is certified.
func (r *certRecorder) done() bool { return !math.IsInf(r.cert[r.target], 1) }

// Record implements solver.Recorder; Solve calls RecordPoint instead.
func (r *certRecorder) Record(solver.TracePoint) error {
	return errors.New("bench: certRecorder needs the recorded point")
}

// RecordPoint implements solver.PointRecorder.
func (r *certRecorder) RecordPoint(p solver.TracePoint, x []float64) error {
	err := r.hit.RecordPoint(p, x)
	if err != nil && !errors.Is(err, errReached) {
		return err
	}
	res := r.hit.last
	for i, eps := range r.s.Eps {
		if !math.IsInf(r.cert[i], 1) || res > eps || (!r.anytime && i != r.target) {
			continue
		}
		r.checks++
		st := &solver.Settings{Seed: r.seed, Certify: solver.CertifySettings{Delta: r.s.Delta, Seed: r.checks, Calls: certCalls}}
		c, cerr := solver.CertifyRadius(r.ctx, r.prob, x, eps/2, 1, st)
		if cerr != nil {
			r.err = cerr
			return cerr
		}
		if c.Rigorous() && c.Bound <= eps {
			r.cert[i] = float64(p.Samples + c.Samples)
		}
	}
	if r.done() {
		// A method with its own rigorous bound (VR-GHAL) may stop with
		// Success at this very point, which Solve decides after the
		// recorder: let it, so that its count is its samples alone, and
		// stop the run at the next point.
		if r.ownBound && !r.graced {
			r.graced = true
			return nil
		}
		return errReached
	}
	return nil
}
