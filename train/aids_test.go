package train

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// aidCases are the dense models on which the training aids' gradients are
// checked: the projected cell and the weight-normalised one (whose
// parameters are V and g).
func aidCases() []stepCase {
	c := stepCases()[0]
	wn := c
	wn.name, wn.model.Normalization = "dense-weightnorm", layers.WeightNorm
	return []stepCase{c, wn}
}

// aidGradientAt runs the training step's gradient with aids a on the first
// n training images of c, with tight solves, and returns the trainer, the
// forward solution and copies of the gradients.
func aidGradientAt(t *testing.T, c stepCase, n int, a AidsConfig) (*Trainer, *deq.Solution, [][]float64) {
	cfg := tightConfig(c, n)
	cfg.Aids = a
	trn, err := New(cfg, c.train, c.test, nil)
	require.NoError(t, err)
	x, labels := c.train.X[:n*c.train.Dim()], c.train.Y[:n]
	sol, _, skip, err := trn.gradient(x, labels, &trn.bm)
	require.NoError(t, err)
	require.Empty(t, skip)
	require.Equal(t, solver.Success, sol.Result.Status)
	require.Equal(t, solver.Success, trn.bm.Backward.Status)
	grads := make([][]float64, len(trn.grads))
	for i, g := range trn.grads {
		grads[i] = append([]float64(nil), g...)
	}
	return trn, sol, grads
}

// solvedLoss solves the fixed points of the raw images x with the
// trainer's layer and returns the solution, the scratch (holding the
// encoder's features) and the summed cross-entropy of the readout.
func solvedLoss(t *testing.T, trn *Trainer, x []float64, labels []int) (*deq.Solution, *work, float64) {
	m, n := trn.model, len(labels)
	w := m.work(n)
	m.standardize(w.xs, x)
	require.NoError(t, m.encode(w, w.e, n))
	sol, err := trn.layer.Forward(context.Background(), w.e)
	require.NoError(t, err)
	require.Equal(t, solver.Success, sol.Result.Status)
	m.readout(w, sol.Z, n)
	ce, _ := crossEntropy(nil, w.logits, labels, m.Classes)
	return sol, w, ce
}

// requireMatchesFD compares grads with central differences of loss in
// every parameter (three entries each).
func requireMatchesFD(t *testing.T, m *Model, grads [][]float64, loss func() float64) {
	const h = 1e-5
	for i, p := range m.params {
		for _, j := range []int{0, len(p.data) / 2, len(p.data) - 1} {
			old := p.data[j]
			p.data[j] = old + h
			lp := loss()
			p.data[j] = old - h
			lm := loss()
			p.data[j] = old
			fd := (lp - lm) / (2 * h)
			require.InDelta(t, fd, grads[i][j], 1e-7+1e-5*math.Abs(fd), "%s[%d]", p.name, j)
		}
	}
}

// TestJacobianLossGradientMatchesFiniteDifferences checks the gradient of
// the whole training loss with Jacobian regularisation, CE(z*) + w·R(z*, x)
// with R the Hutchinson estimate for the batch's probes, against central
// differences in which z* is solved again at every perturbed parameter:
// the step differentiates R through the parameters, the encoder and z*.
func TestJacobianLossGradientMatchesFiniteDifferences(t *testing.T) {
	for _, c := range aidCases() {
		t.Run(c.name, func(t *testing.T) {
			const n, weight = 8, 0.7
			trn, _, grads := aidGradientAt(t, c, n, AidsConfig{JacWeight: weight})
			require.True(t, trn.bm.JacApplied)
			require.Positive(t, trn.bm.JacFrob)
			m := trn.model
			x, labels := c.train.X[:n*c.train.Dim()], c.train.Y[:n]
			loss := func() float64 {
				// The layer keeps the step's seeds: the same probes.
				sol, _, ce := solvedLoss(t, trn, x, labels)
				est, err := trn.layer.JacobianRegularize(sol, 0, &deq.JacobianRegOptions{Seed: streamJacobian}, nil, nil)
				require.NoError(t, err)
				return ce/float64(n) + weight*est.Value
			}
			require.InDelta(t, trn.bm.Loss+weight*trn.bm.JacFrob, loss(), 1e-12)
			requireMatchesFD(t, m, grads, loss)
		})
	}
}

// TestCorrectionLossGradientMatchesFiniteDifferences checks the gradient of
// the whole training loss with fixed-point correction, CE(z*) +
// Σ_k w̄_k CE(f(z_k, x)), against central differences in which z* is
// solved again at every perturbed parameter and the collected states z_k
// are held at the step's values (the one-step path).
func TestCorrectionLossGradientMatchesFiniteDifferences(t *testing.T) {
	for _, c := range aidCases() {
		t.Run(c.name, func(t *testing.T) {
			const n, k, gamma = 8, 3, 0.6
			trn, sol, grads := aidGradientAt(t, c, n, AidsConfig{CorrectionStates: k, CorrectionGamma: gamma})
			require.Len(t, sol.States, k)
			states := make([][]float64, k)
			for i, s := range sol.States {
				states[i] = append([]float64(nil), s.Z...)
			}
			wts := correctionWeights(nil, k, gamma)
			require.InDelta(t, 1, wts[0]+wts[1]+wts[2], 1e-15)
			require.InDelta(t, gamma*gamma*wts[2], wts[0], 1e-15)
			m := trn.model
			x, labels := c.train.X[:n*c.train.Dim()], c.train.Y[:n]
			f := make([]float64, len(states[0]))
			loss := func() float64 {
				_, w, ce := solvedLoss(t, trn, x, labels)
				total := ce / float64(n)
				ev, err := m.cell.Evaluator(n)
				require.NoError(t, err)
				require.NoError(t, ev.SetInput(w.e))
				for i, z := range states {
					require.NoError(t, ev.EvalExact(f, z))
					m.readout(w, f, n)
					ce, _ := crossEntropy(nil, w.logits, labels, m.Classes)
					total += wts[i] * ce / float64(n)
				}
				return total
			}
			require.InDelta(t, trn.bm.Loss+trn.bm.CorrectionLoss, loss(), 1e-12)
			requireMatchesFD(t, m, grads, loss)
		})
	}
}

// TestDropoutMaskFixedPerBatchAndOffInEvaluation: under Config.Aids.Dropout
// the training solve is the fixed point of one masked map — every iterate
// of a Picard solve from zero vanishes exactly on the same dropped entries,
// about a fraction p of them, and z* is the masked map's fixed point — the
// next batch draws another mask, and evaluation applies none.
func TestDropoutMaskFixedPerBatchAndOffInEvaluation(t *testing.T) {
	const p, n = 0.25, 16
	c := stepCases()[0]
	cfg := tinyConfig()
	cfg.BatchSize = n
	cfg.Model = c.model
	cfg.Forward = SolverConfig{Method: methodNamed("picard"), Tol: 1e-11, MaxIter: 1000}
	cfg.Aids = AidsConfig{Dropout: p, CorrectionStates: 4}
	trn, err := New(cfg, c.train, c.test, nil)
	require.NoError(t, err)
	m := trn.model
	dropped := func(z []float64) []bool {
		d := make([]bool, len(z))
		for i, v := range z {
			d[i] = v == 0
		}
		return d
	}
	var masks [][]bool
	for b := range 2 {
		trn.batch = b
		x, labels := c.train.X[b*n*c.train.Dim():(b+1)*n*c.train.Dim()], c.train.Y[b*n:(b+1)*n]
		sol, _, skip, err := trn.gradient(x, labels, &trn.bm)
		require.NoError(t, err)
		require.Empty(t, skip)
		require.True(t, sol.Dropout)
		require.Equal(t, solver.Success, sol.Result.Status)
		mask := dropped(sol.Z)
		frac := 0
		for _, d := range mask {
			if d {
				frac++
			}
		}
		require.InDelta(t, p, float64(frac)/float64(len(mask)), 0.12, "about a fraction p dropped")
		require.Len(t, sol.States, 4)
		for _, s := range sol.States {
			require.Equal(t, mask, dropped(s.Z), "iteration %d: the same mask at every iteration", s.Iter)
		}
		// z* is the fixed point of z ↦ m ⊙ f(z, x)/(1 − p).
		ev, err := m.cell.Evaluator(n)
		require.NoError(t, err)
		require.NoError(t, ev.SetInput(sol.X))
		f := make([]float64, len(sol.Z))
		require.NoError(t, ev.EvalExact(f, sol.Z))
		for i, v := range f {
			want := v / (1 - p)
			if mask[i] {
				want = 0
			}
			require.InDelta(t, want, sol.Z[i], 1e-9)
		}
		masks = append(masks, mask)
	}
	require.NotEqual(t, masks[0], masks[1], "a fresh mask for every batch")

	// Evaluation: no mask, the cell's own fixed point.
	ne := c.test.Len()
	w := m.work(ne)
	m.standardize(w.xs, c.test.X[:ne*c.test.Dim()])
	require.NoError(t, m.encode(w, w.e, ne))
	sol, err := trn.evalLayer.Forward(context.Background(), w.e)
	require.NoError(t, err)
	require.False(t, sol.Dropout)
	plain, err := m.layer(trn.cfg.Eval, nil, nil)
	require.NoError(t, err)
	want, err := plain.Forward(context.Background(), w.e)
	require.NoError(t, err)
	require.Equal(t, want.Z, sol.Z)
	for _, v := range sol.Z {
		require.NotZero(t, v)
	}
}

// exactJacobians returns, for each example of the fixed points z of a
// model's cell at input e, the Jacobian ∂f_b/∂z_b by central differences
// of EvalExact (d×d, row i = ∂f_i).
func exactJacobians(t *testing.T, m *Model, e, z []float64, n int) []*mat.Dense {
	ev, err := m.cell.Evaluator(n)
	require.NoError(t, err)
	require.NoError(t, ev.SetInput(e))
	d := len(z) / n
	const h = 1e-6
	fp, fm := make([]float64, len(z)), make([]float64, len(z))
	zz := append([]float64(nil), z...)
	js := make([]*mat.Dense, n)
	for b := range n {
		js[b] = mat.NewDense(d, d, nil)
	}
	for j := range d {
		for b := range n {
			zz[b*d+j] = z[b*d+j] + h
		}
		require.NoError(t, ev.EvalExact(fp, zz))
		for b := range n {
			zz[b*d+j] = z[b*d+j] - h
		}
		require.NoError(t, ev.EvalExact(fm, zz))
		for b := range n {
			zz[b*d+j] = z[b*d+j]
			for i := range d {
				js[b].Set(i, j, (fp[b*d+i]-fm[b*d+i])/(2*h))
			}
		}
	}
	return js
}

// TestSpectralMetricMatchesEigenDecomposition: the spectral radius and norm
// of the epoch metrics (and of Model.Spectral) are the largest over the
// monitored test images of max|λ(J_b)| and σ_max(J_b), computed here by an
// eigen- and a singular-value decomposition of the Jacobians, on a tiny
// model after one epoch; both are below the declared bound γ̄.
func TestSpectralMetricMatchesEigenDecomposition(t *testing.T) {
	for _, act := range []layers.Activation{layers.Tanh, layers.ReLU} {
		t.Run(act.String(), func(t *testing.T) {
			tr, te := blobData(256, 40)
			cfg := tinyConfig()
			cfg.Epochs = 1
			cfg.Model.Activation = act
			cfg.Model.Gamma = 0.8
			tn, err := New(cfg, tr, te, nil)
			require.NoError(t, err)
			res, err := tn.Run(context.Background())
			require.NoError(t, err)
			em := res.Final()
			m := tn.model
			n := min(SpectralBatch, te.Len())
			w := m.work(n)
			m.standardize(w.xs, te.X[:n*m.InputDim])
			require.NoError(t, m.encode(w, w.e, n))
			sol, err := tn.evalLayer.Forward(context.Background(), w.e)
			require.NoError(t, err)
			rho, sigma := 0.0, 0.0
			for _, j := range exactJacobians(t, m, w.e, sol.Z, n) {
				var eig mat.Eigen
				require.True(t, eig.Factorize(j, mat.EigenNone))
				for _, v := range eig.Values(nil) {
					rho = math.Max(rho, math.Hypot(real(v), imag(v)))
				}
				var svd mat.SVD
				require.True(t, svd.Factorize(j, mat.SVDNone))
				sigma = math.Max(sigma, svd.Values(nil)[0])
			}
			require.InDelta(t, rho, em.SpectralRadius, 1e-5*rho+1e-7, "spectral radius")
			require.InDelta(t, sigma, em.SpectralNorm, 1e-3*sigma, "spectral norm (power iteration)")
			require.LessOrEqual(t, em.SpectralNorm, cfg.Model.Gamma*(1+1e-6))
			sp, err := m.Spectral(context.Background(), te, cfg.Eval)
			require.NoError(t, err)
			require.InDelta(t, rho, sp.Radius, 1e-5*rho+1e-7)
			require.Equal(t, cfg.Model.Gamma, sp.Gamma)
			require.True(t, sp.Proven)
		})
	}
}

// TestAidsRefusedNamingTheField: invalid aids, and aids a cell or solver
// cannot honour, are *FieldError naming the field.
func TestAidsRefusedNamingTheField(t *testing.T) {
	tr, te := blobData(64, 10)
	for _, tc := range []struct {
		field string
		cfg   func(*Config)
	}{
		{"Aids.JacWeight", func(c *Config) { c.Aids.JacWeight = -1 }},
		{"Aids.JacFreq", func(c *Config) { c.Aids.JacFreq = 2 }},
		{"Aids.CorrectionStates", func(c *Config) { c.Aids.CorrectionStates = -1 }},
		{"Aids.CorrectionGamma", func(c *Config) { c.Aids.CorrectionGamma = 0.5 }},
		{"Aids.CorrectionGamma", func(c *Config) { c.Aids.CorrectionStates, c.Aids.CorrectionGamma = 2, 2 }},
		{"Aids.Dropout", func(c *Config) { c.Aids.Dropout = 1 }},
		{"Model.Normalization", func(c *Config) { c.Model.Normalization = 7 }},
		{"Model.Normalization", func(c *Config) { c.Model.Cell, c.Model.Normalization = MeanFieldCell, layers.WeightNorm }},
		{"Model.Normalization", func(c *Config) {
			c.Model.Cell, c.Model.Encoder, c.Model.Normalization = ConvCell, 0, layers.SpectralNorm
		}},
		// Refused by New: a cell without the fused penalty, and solvers
		// that need a bound γ̄ < 1.
		{"Aids.JacWeight", func(c *Config) { c.Model.Cell, c.Model.Encoder, c.Aids.JacWeight = MeanFieldCell, 0, 0.1 }},
		{"Model.Normalization", func(c *Config) { c.Model.Normalization, c.Forward.Method = layers.WeightNorm, methodNamed("ghal") }},
		{"Model.Normalization", func(c *Config) { c.Model.Normalization, c.Eval.Method = layers.WeightNorm, methodNamed("vrghal") }},
		{"Model.Normalization", func(c *Config) {
			c.Model = ModelConfig{Cell: ConvCell, Channels: 2, Normalization: layers.WeightNorm}
			c.Forward.Method = methodNamed("ghal")
		}},
		{"Model.Normalization", func(c *Config) {
			c.Model = ModelConfig{Cell: ConvCell, Channels: 2, Groups: -1, Normalization: layers.WeightNorm}
			c.Forward.Method = methodNamed("vrghal")
		}},
		{"Aids.Dropout", func(c *Config) { c.Aids.Dropout, c.Forward.Method = 0.2, methodNamed("ghal") }},
	} {
		cfg := tinyConfig()
		tc.cfg(&cfg)
		_, err := New(cfg, tr, te, nil)
		var fe *FieldError
		require.ErrorAs(t, err, &fe, tc.field)
		require.Equal(t, tc.field, fe.Field)
	}
	// Dropout is off in evaluation: GHAL evaluates a dropout run.
	cfg := tinyConfig()
	cfg.Aids.Dropout, cfg.Eval.Method = 0.2, methodNamed("ghal")
	_, err := New(cfg, tr, te, nil)
	require.NoError(t, err)
}

// TestOldCheckpointHasNoAids: a checkpoint written before the aids existed
// loads as a run without them and resumes.
func TestOldCheckpointHasNoAids(t *testing.T) {
	ck, err := Load("testdata/v1-gorgonia-step.ckpt")
	require.NoError(t, err)
	require.Zero(t, ck.Config.Aids)
	require.Equal(t, layers.Projection, ck.Config.Model.Normalization)
	for _, e := range ck.History {
		require.Zero(t, e.SpectralRadius, "not measured then")
	}
}
