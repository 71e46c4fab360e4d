package deq

// Term evaluations: one term of a cell's finite sum evaluated on the whole
// batch (layers.Evaluator.Terms terms make the exact map). They are the
// unit that decides whether sampling a stochastic cell pays: an exact
// evaluation, a certificate's exact call or an exact VJP counts every
// term, a sampled one its sample size.

// TermEvals returns the term evaluations of the forward solve: the
// solver's unit samples (an exact call counts every term) plus those of
// its residual certificate, the exact certifying call included. It is 0
// for a nil Solution or one without a Result.
func (s *Solution) TermEvals() int64 {
	if s == nil || s.Result == nil {
		return 0
	}
	n := s.Result.Stats.Samples
	if c := s.Result.Certificate; c != nil {
		n += c.Samples
	}
	return n
}

// TermEvals returns the term evaluations of the backward pass of a cell
// whose evaluator has terms terms: the adjoint solve's unit samples (each
// sampled VJP counts its sample size, an exact one every term) and its
// certificate's, plus terms for each full VJP (VJPs). It is 0 for nil
// stats.
func (st *BackwardStats) TermEvals(terms int) int64 {
	if st == nil {
		return 0
	}
	n := int64(st.VJPs) * int64(terms)
	if r := st.Adjoint; r != nil {
		n += r.Stats.Samples
		if c := r.Certificate; c != nil {
			n += c.Samples
		}
	}
	return n
}
