package layers

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/deqgo/deq/internal/enum"
	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/solver"
)

// Normalization selects how a Dense cell keeps its recurrent weight W in
// check: by projecting the trained W (the default) or by training other
// parameters from which W is computed (a reparameterisation, whose
// gradient flows through the normalisation). Dense offers all three (its
// DenseConfig.Normalization), Conv Projection and WeightNorm (its
// ConvConfig.Normalization); MeanField and Experts keep their projection.
type Normalization int

const (
	// Projection, the zero value, trains W itself and rescales it in place
	// after every optimiser step (Project) to satisfy the cell's
	// Constraint: a proven bound γ̄ in the constraint's norm, the one the
	// certificates and GHAL's schedule need.
	Projection Normalization = iota
	// WeightNorm is the weight normalisation of "Weight Normalization: A
	// Simple Reparameterization to Accelerate Training of Deep Neural
	// Networks" by Tim Salimans and Diederik P. Kingma (NeurIPS 2016), per
	// output unit as TorchDEQ applies it: W_ij = g_j V_ij/‖V_{:,j}‖, column
	// j of W (the weights into output unit j) with its own learnable norm
	// g_j. The parameters are V (Hidden×Hidden) and g (1×Hidden), initialised
	// so that W starts as the projected initial weight. (A Conv cell
	// normalises each output channel's C×3×3 weights instead; see Conv.)
	// It bounds nothing: ‖W‖₂ ≤ ‖W‖_F = ‖g‖ changes with training. Gamma
	// is +Inf and Proven is false in every norm.
	WeightNorm
	// SpectralNorm is the differentiable form of the ℓ2 projection, after
	// "Spectral Normalization for Generative Adversarial Networks" by Takeru
	// Miyato, Toshiki Kataoka, Masanori Koyama and Yuichi Yoshida (ICLR
	// 2018): W = V·γ̄/max(σ_max(V), γ̄), with σ_max computed exactly (gonum's
	// SVD) every time W is recomputed. The parameter is V (Hidden×Hidden),
	// initialised to the raw initial weight, so that W starts as the
	// projected one (the map is not differentiable where σ_max(V) = γ̄; a
	// V started on that boundary, as the projected weight would be, would
	// sit on the kink).
	// Since σ_max is exact, ‖W‖₂ ≤ γ̄ holds and Proven is true where the ℓ2
	// Projection's is; it needs the ℓ2 Constraint (Lipschitz.P of 0 or 2).
	// Unlike Projection the gradient sees the normalisation (through
	// σ_max's derivative u₁v₁ᵀ, assuming a simple top singular value).
	SpectralNorm
)

var normalizations = enum.Table[Normalization]{Names: []string{"project", "weight", "spectral"}, Unknown: errUnknown, What: "normalization", Or: true, Invalid: "layers: DenseConfig.Normalization = %s is not a normalization"}

// String returns the name ParseNormalization accepts: "project", "weight"
// or "spectral".
func (n Normalization) String() string { return normalizations.Name(n) }

// ParseNormalization returns the normalisation named s, as String names
// them. Any other name is an error.
func ParseNormalization(s string) (Normalization, error) { return normalizations.Parse(s) }

// MarshalText implements encoding.TextMarshaler with the normalisation's
// name. It returns an error for a value that is not a normalisation.
func (n Normalization) MarshalText() ([]byte, error) { return normalizations.MarshalText(n) }

// UnmarshalText implements encoding.TextUnmarshaler with
// ParseNormalization.
func (n *Normalization) UnmarshalText(text []byte) error {
	return normalizations.UnmarshalText(n, text)
}

func (n Normalization) valid() error { return n.validIn("DenseConfig") }

// validIn is valid with the error naming the field Normalization of the
// configuration type cfg.
func (n Normalization) validIn(cfg string) error {
	if !normalizations.Valid(n) {
		return fmt.Errorf("layers: %s.Normalization = %s is not a normalization", cfg, normalizations.Name(n))
	}
	return nil
}

// reparam is the reparameterisation W = W(V, g) of a Dense cell under
// WeightNorm or SpectralNorm, or of a Conv cell under WeightNorm: its
// parameters and what the chain rule needs from the last recomputation of
// W.
type reparam struct {
	kind  Normalization
	cell  string    // the cell type, for errors
	gamma float64   // γ̄ (SpectralNorm)
	h     int       // SpectralNorm: W is h×h
	v, g  *Param    // V, and g (WeightNorm; nil otherwise)
	units units     // WeightNorm: the units of W that have a norm g_j each
	norms []float64 // ‖V_j‖ per unit (WeightNorm)
	// SpectralNorm: σ_max(V), its singular vectors, and whether W was
	// scaled (σ > γ̄).
	sigma  float64
	u1, v1 []float64
	scaled bool
	a      *mat.Dense
	svd    mat.SVD
	um, vm mat.Dense
	// Copies of V and g at the last compute, to recompute W when they
	// change (sync).
	vAt, gAt []float64
}

// newReparam returns the reparameterisation of a Dense cell's h×h W: under
// WeightNorm per column (output unit), with g 1×h.
func newReparam(kind Normalization, gamma float64, h int) *reparam {
	if kind == WeightNorm {
		return newWeightNorm("Dense", h, h, 1, h, unitColumns(h))
	}
	r := &reparam{kind: kind, cell: "Dense", gamma: gamma, h: h, v: newParam("V", h, h)}
	if kind == SpectralNorm {
		r.u1, r.v1 = make([]float64, h), make([]float64, h)
		r.a = mat.NewDense(h, h, nil)
	}
	return r
}

// newWeightNorm returns the WeightNorm reparameterisation of a rows×cols W
// of a cell of type cell, whose units u (one norm g_j each, g gRows×gCols in
// unit order) are laid out in W as u says.
func newWeightNorm(cell string, rows, cols, gRows, gCols int, u units) *reparam {
	return &reparam{
		kind:  WeightNorm,
		cell:  cell,
		v:     newParam("V", rows, cols),
		g:     newParam("g", gRows, gCols),
		units: u,
		norms: make([]float64, u.n),
	}
}

// init sets the parameters so that they give w.
func (r *reparam) init(w []float64) {
	copy(r.v.Data(), w)
	if r.kind == WeightNorm {
		r.units.norms(r.g.Data(), w)
	}
}

// units is the layout of the units of a weight normalisation in the
// row-major backing of W: unit j has the len entries
// w[j·stride + i·step], i = 0, …, len−1.
type units struct {
	n, len, stride, step int
}

// unitColumns are the units of an h×h matrix that are its columns.
func unitColumns(h int) units { return units{n: h, len: h, stride: 1, step: h} }

// unitRows are the units of an n×cols matrix that are its rows.
func unitRows(n, cols int) units { return units{n: n, len: cols, stride: cols, step: 1} }

// at returns the index in W of entry i of unit j.
func (u units) at(j, i int) int { return j*u.stride + i*u.step }

// norms writes the ℓ2 norms of the units of w into dst.
func (u units) norms(dst, w []float64) {
	for j := range u.n {
		s := 0.0
		for i := range u.len {
			x := w[u.at(j, i)]
			s += x * x
		}
		dst[j] = math.Sqrt(s)
	}
}

// sync recomputes W into w unless V and g are bit for bit those of the
// last compute.
func (r *reparam) sync(w []float64) error {
	if r.vAt != nil && numeric.SameBits(r.vAt, r.v.Data()) && (r.g == nil || numeric.SameBits(r.gAt, r.g.Data())) {
		return nil
	}
	return r.compute(w)
}

// compute writes W(V, g) into w and keeps what the chain rule needs. A
// NaN or ±Inf in V or g is an error wrapping solver.ErrNonFinite, found
// before any SVD sees it.
func (r *reparam) compute(w []float64) error {
	h, v := r.h, r.v.Data()
	if !numeric.AllFinite(v) || (r.g != nil && !numeric.AllFinite(r.g.Data())) {
		return fmt.Errorf("layers: %s.Project: the %v parameters are not finite: %w", r.cell, r.kind, solver.ErrNonFinite)
	}
	r.vAt = append(r.vAt[:0], v...)
	if r.g != nil {
		r.gAt = append(r.gAt[:0], r.g.Data()...)
	}
	switch r.kind {
	case WeightNorm:
		r.units.norms(r.norms, v)
		g := r.g.Data()
		for j, n := range r.norms {
			for i := range r.units.len {
				k := r.units.at(j, i)
				w[k] = 0
				if n > 0 {
					w[k] = g[j] * v[k] / n
				}
			}
		}
	case SpectralNorm:
		copy(r.a.RawMatrix().Data, v)
		if !r.svd.Factorize(r.a, mat.SVDThin) {
			return fmt.Errorf("layers: Dense: the SVD of V did not converge")
		}
		r.sigma = r.svd.Values(nil)[0]
		r.svd.UTo(&r.um)
		r.svd.VTo(&r.vm)
		for i := range h {
			r.u1[i] = r.um.At(i, 0)
			r.v1[i] = r.vm.At(i, 0)
		}
		r.scaled = r.sigma > r.gamma
		f := 1.0
		if r.scaled {
			f = r.gamma / r.sigma
		}
		for i, x := range v {
			w[i] = f * x
		}
	}
	for _, x := range w {
		if math.IsNaN(x) {
			return fmt.Errorf("layers: %s.Project: W computed from the %v parameters holds NaN", r.cell, r.kind)
		}
	}
	return nil
}

// chain adds to the gradients of V (and g) the gradient gw with respect to
// W, by the chain rule through the last compute, and clears gw.
//
// WeightNorm, with n_j = ‖V_j‖ the norm of unit j and G = gw:
// ∂/∂g_j = Σ_i G_ij V_ij/n_j and ∂/∂V_ij = (g_j/n_j)(G_ij − V_ij·∂/∂g_j/n_j),
// i running over the entries of unit j.
// SpectralNorm, when σ = σ_max(V) > γ̄: ∂/∂V = (γ̄/σ)G − (γ̄⟨G, V⟩/σ²)u₁v₁ᵀ;
// otherwise W = V and ∂/∂V = G.
func (r *reparam) chain(gw []float64) {
	h, v, gv := r.h, r.v.Data(), r.v.GradData()
	switch r.kind {
	case WeightNorm:
		g, gg := r.g.Data(), r.g.GradData()
		for j, n := range r.norms {
			if n == 0 {
				continue
			}
			s := 0.0
			for i := range r.units.len {
				k := r.units.at(j, i)
				s += gw[k] * v[k]
			}
			s /= n
			gg[j] += s
			for i := range r.units.len {
				k := r.units.at(j, i)
				gv[k] += g[j] / n * (gw[k] - v[k]*s/n)
			}
		}
	case SpectralNorm:
		if !r.scaled {
			addTo(gv, gw)
			break
		}
		f := r.gamma / r.sigma
		c := f * dot64(gw, v) / r.sigma
		for i := range h {
			for j := range h {
				gv[i*h+j] += f*gw[i*h+j] - c*r.u1[i]*r.v1[j]
			}
		}
	}
	clear(gw)
}

func dot64(a, b []float64) float64 {
	s := 0.0
	for i, x := range a {
		s += x * b[i]
	}
	return s
}
