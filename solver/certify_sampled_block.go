package solver

// Block evaluation of the terms of a sampled certificate.
//
// A sampled certificate draws its terms in blocks when the oracle is a
// TermsEvaluator: one EvalTerms call evaluates up to blockTerms terms
// (one gathered matrix product for a mean-field cell, say, instead of one
// small product per term), and the statistics fold them in one loop. The
// law of the sample is that of the single-term path:
//
//   - Without replacement (RuleSampledSerfling) the block's indices are the
//     next entries of the same lazily drawn uniform permutation of [0, M)
//     that EvalTerm would be called with, so the first n terms are a
//     uniform draw of n distinct terms whatever the block boundaries.
//   - With replacement (RuleSampledBernstein) the indices are independent
//     and uniform on [0, M). An Eval of Size 1 returns f_m with m uniform
//     on [0, M) (TermBound), independently of every other call since its
//     seed is fresh; so f_{U_1}, …, f_{U_n} with U_i independent uniform
//     indices have the same joint law as n Evals of Size 1, and every
//     statement of bernsteinRadius about the latter holds for the former.

// TermsEvaluator is implemented by FiniteSum oracles that evaluate a block
// of chosen terms at once; a sampled certificate then draws its terms in
// blocks (see CertifySettings.Sampled).
type TermsEvaluator interface {
	// EvalTerms writes f_{idx[j]}(x), the idx[j]-th of the Terms() terms
	// (0 ≤ idx[j] < Terms()), into dst[j·len(x) : (j+1)·len(x)] for every
	// j; len(dst) must be len(idx)·len(x). Indices may repeat. It must not
	// keep x, dst or idx.
	EvalTerms(dst, x []float64, idx []int) error
}

const (
	// sampledBlock is the largest number of terms of one EvalTerms call.
	sampledBlock = 64
	// sampledBlockFloats caps the block buffer at this many float64s.
	sampledBlockFloats = 1 << 19
)

// blockTerms returns the number of terms of one block for states of length
// d: sampledBlock, fewer when the buffer would exceed sampledBlockFloats,
// at least 1.
func blockTerms(d int) int {
	return max(1, min(sampledBlock, sampledBlockFloats/max(d, 1)))
}

// growBlocks is grow for a TermsEvaluator: it draws the indices of up to
// len(s.idx) terms (the next entries of the permutation without
// replacement, independent uniform indices with replacement), evaluates
// them with one EvalTerms call and folds each into the statistics,
// observing the context before each block. It allocates nothing.
func (s *sampler) growBlocks(n int, b float64) error {
	d := len(s.x)
	for s.n < n {
		if err := stopped(s.ctx, s.calls); err != nil {
			return err
		}
		k := min(len(s.idx), n-s.n)
		idx := s.idx[:k]
		for j := range idx {
			if s.te != nil {
				idx[j] = s.termAt(s.n + j)
			} else {
				idx[j] = s.rng.IntN(s.m)
			}
		}
		err := s.tes.EvalTerms(s.block[:k*d], s.x, idx)
		s.calls++
		s.samples += int64(k)
		if err != nil {
			return err
		}
		term := s.term
		for j := range k {
			s.term = s.block[j*d : (j+1)*d]
			if err := s.addChecked(b); err != nil {
				s.term = term
				return err
			}
		}
		s.term = term
	}
	return nil
}
