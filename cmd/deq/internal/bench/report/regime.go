package report

import (
	"fmt"
	"strings"
)

// RegimeReport is the "sampled vs exact forward" section: the term
// evaluations and seconds per certified forward solve of a mean-field DEQ
// cell, f(z, x) = xU + b + (1/M) Σ_m v_m tanh(w_mᵀz + c_m), for sampled
// solvers on its stochastic oracle and exact solvers on its exact average,
// all started from the injection z = xU + b.
type RegimeReport struct {
	Hidden int `json:"hidden"`
	Input  int `json:"input"`
	Batch  int `json:"batch"`
	// Seeds is the number of solver seeds of the sampled methods.
	Seeds int `json:"seeds"`
	// Trained describes how the trained cells were trained; nil when the
	// report has none.
	Trained *RegimeTraining `json:"trained,omitempty"`
	Rows    []RegimeRow     `json:"rows"`
}

// RegimeTraining is how the regime section's trained cells were made: a
// mean-field classifier trained by package train, as deq train --cell
// meanfield --units M trains it, whose cell is then solved on the encoder
// features of Batch held-out images.
type RegimeTraining struct {
	// Data is the training set's name and Images its number of images.
	Data   string `json:"data"`
	Images int    `json:"images"`
	// Epochs, BatchSize and LR are the training run's.
	Epochs    int     `json:"epochs"`
	BatchSize int     `json:"batch_size"`
	LR        float64 `json:"lr"`
	// Activation is the cell's activation, Forward the training's forward
	// solver.
	Activation string `json:"activation"`
	Forward    string `json:"forward"`
}

// RegimeRow is one cell (initialisation and M) at one accuracy ε.
type RegimeRow struct {
	// Cell is "fresh" (independent random units), "redundant" (32
	// prototype units plus noise) or "trained" (see RegimeTraining).
	Cell  string  `json:"cell"`
	Units int     `json:"units"`
	Eps   float64 `json:"eps"`
	// TermRelVar is σ²/‖z*‖², the variance of one unit sample at the fixed
	// point relative to its squared norm (whole batch).
	TermRelVar float64 `json:"term_rel_var"`
	// Contraction is ‖f(z₀) − f(z*)‖/‖z₀ − z*‖ from the start z₀ (the
	// injection): the contraction seen between the start and the fixed
	// point, against the projected bound γ̄.
	Contraction float64 `json:"contraction"`
	// TestAcc is a trained cell's classifier's accuracy on the held-out
	// images the row solves on; zero for the other cells.
	TestAcc float64        `json:"test_acc,omitempty"`
	Methods []RegimeMethod `json:"methods"`
}

// RegimeMethod is one method's cost of a certified solve: the residual
// ‖f(z) − z‖ ≤ ε‖z*‖, proven by an exact evaluation or, for the methods
// named with "+sampled-cert", by a sampled certificate with probability at
// least 1 − 0.05.
type RegimeMethod struct {
	Method string `json:"method"`
	// Sampled methods run on the sampled oracle, the others on the exact
	// cell.
	Sampled bool `json:"sampled"`
	// TermEvals is the median over seeds of the term evaluations (unit
	// samples: one unit on the whole batch) of the solve and its exact
	// certificate; Exact is TermEvals/M, in exact calls.
	TermEvals float64 `json:"term_evals"`
	Exact     float64 `json:"exact_calls"`
	// Seconds is the median wall time of the solve and its certificate.
	Seconds float64 `json:"seconds"`
	// Certified counts the runs whose exact residual met the tolerance.
	Certified int `json:"certified"`
	Runs      int `json:"runs"`
}

// RegimeTrained is RegimeRow.Cell of a trained cell.
const RegimeTrained = "trained"

// writeRegime writes the section's table.
func writeRegime(b *strings.Builder, rg *RegimeReport) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## Sampled vs exact forward\n\n")
	p("A `layers.MeanField` cell f(z, x) = xU + b + (1/M) Σ_m v_m tanh(w_mᵀz + c_m), hidden %d, input %d, batch %d, γ̄ = 0.9 (mean-square), random inputs of entries N(0, 0.01); every solver starts at the injection z = xU + b and a solve counts when its residual ‖f(z) − z‖ (ℓ2 over the batch) is at most ε‖z*‖, proven by an exact evaluation, whose M terms are counted, or for the methods marked +sampled-cert by a sampled certificate with probability ≥ 0.95 (the method's own, from a sample of the terms, which are counted; see docs/sampled-certificates.md). Entries: term evaluations in exact calls (term evaluations / M) and wall seconds, medians (sampled methods: %d seeds); a run that did not certify is marked with the number of runs that did. *fresh*: independent random units; *redundant*: 32 prototype units plus noise (as trained units tend to be). σ²/‖z*‖² is the variance of one unit sample at z*, ρ = ‖f(z₀) − f(z*)‖/‖z₀ − z*‖ the contraction seen from the start (the cell's projected bound is 0.9).", rg.Hidden, rg.Input, rg.Batch, rg.Seeds)
	if t := rg.Trained; t != nil {
		p(" *trained*: the cell of a mean-field classifier (encoder → DEQ → readout, hidden %d, encoder features %d, activation %s, the other settings `deq train --cell meanfield --units M`'s defaults) trained by package train for %d epoch%s on %d %s images (batch %d, learning rate %g, %s forward), solved on the encoder features of %d held-out images", rg.Hidden, rg.Input, t.Activation, t.Epochs, plural(t.Epochs), t.Images, t.Data, t.BatchSize, t.LR, t.Forward, rg.Batch)
		sep := ", whose accuracy is "
		for _, r := range rg.Rows {
			if r.Cell == RegimeTrained && r.Eps == rg.Rows[0].Eps {
				p("%sM = %d: %.1f%%", sep, r.Units, 100*r.TestAcc)
				sep = ", "
			}
		}
		p(".")
	}
	p("\n\n")
	if len(rg.Rows) == 0 {
		return
	}
	p("| cell | M | ε | σ²/‖z*‖² | ρ |")
	for _, m := range rg.Rows[0].Methods {
		p(" %s |", m.Method)
	}
	p(" best sampled / best exact |\n|---|---|---|---|---|")
	for range rg.Rows[0].Methods {
		p("---|")
	}
	p("---|\n")
	for _, r := range rg.Rows {
		p("| %s | %d | %s | %.3g | %.2g |", r.Cell, r.Units, fmtEps(r.Eps), r.TermRelVar, r.Contraction)
		for _, m := range r.Methods {
			note := ""
			if m.Certified < m.Runs {
				note = fmt.Sprintf(" (%d/%d certified)", m.Certified, m.Runs)
			}
			p(" %.2f, %.2fs%s |", m.Exact, m.Seconds, note)
		}
		p(" %s |\n", regimeRatio(r))
	}
	p("\n")
}

// plural returns "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// regimeRatio returns the term evaluations of the best sampled method
// over those of the best exact one, among the methods that certified
// every run, or "–".
func regimeRatio(r RegimeRow) string {
	bestS, bestE := -1.0, -1.0
	for _, m := range r.Methods {
		if m.Certified < m.Runs {
			continue
		}
		best := &bestE
		if m.Sampled {
			best = &bestS
		}
		if *best < 0 || m.TermEvals < *best {
			*best = m.TermEvals
		}
	}
	if bestS < 0 || bestE <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", bestS/bestE)
}
