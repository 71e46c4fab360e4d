package datasets

// Fog: a plasma fractal made by the diamond-square algorithm.

// plasmaSize returns the side of Fog's fractal map for a rows×cols image:
// 256, or the smallest power of two holding the image if that is larger.
func plasmaSize(rows, cols int) int {
	n := 256
	for n < rows || n < cols {
		n *= 2
	}
	return n
}

// makePlasma fills k.plasma, an n×n map on a torus (n a power of two),
// with a plasma fractal scaled to [0, 1]: the corner starts at 0; at each
// level, of step s from n down to 2, the centre of every square of side s
// and then the midpoint of every edge of those squares (the centres of
// the diamonds) get the mean of their four neighbours at distance s/2 plus a displacement drawn uniformly from
// [−w², w²]; w starts at 100 and is divided by decay after each level.
func (k *corrupter) makePlasma(n int, decay float64) {
	if len(k.plasma) != n*n {
		k.plasma = make([]float64, n*n)
	}
	m := k.plasma
	mask := n - 1
	m[0] = 0
	w := 100.0
	for s := n; s >= 2; s /= 2 {
		h := s / 2
		// The displacement w·U(−w, w), drawn straight from the PCG (the
		// top 53 bits of a draw make a uniform in [0, 1)).
		w2 := w * w
		wiggle := func() float64 { return w2 * (float64(k.pcg.Uint64()>>11)*0x1p-53*2 - 1) }
		for r := 0; r < n; r += s {
			up, down := r*n, ((r+s)&mask)*n
			for c := 0; c < n; c += s {
				right := (c + s) & mask
				m[(r+h)*n+c+h] = (m[up+c]+m[up+right]+m[down+c]+m[down+right])/4 + wiggle()
			}
		}
		for r := 0; r < n; r += s {
			up, down := r*n, ((r+s)&mask)*n
			above, below := ((r-h)&mask)*n, (r+h)*n
			for c := 0; c < n; c += s {
				right, left := (c+s)&mask, (c-h)&mask
				// The midpoint of the top edge, between two corners and
				// two centres.
				m[up+c+h] = (m[up+c]+m[up+right]+m[above+c+h]+m[below+c+h])/4 + wiggle()
				// The midpoint of the left edge.
				m[below+c] = (m[up+c]+m[down+c]+m[below+left]+m[below+c+h])/4 + wiggle()
			}
		}
		w /= decay
	}
	lo, hi := m[0], m[0]
	for _, v := range m {
		lo, hi = min(lo, v), max(hi, v)
	}
	if hi == lo {
		clear(m)
		return
	}
	for i, v := range m {
		m[i] = (v - lo) / (hi - lo)
	}
}

// fog adds fogAmount times the top-left corner of a fresh plasma fractal
// and rescales by m/(m + fogAmount), m the image's largest pixel (see Fog).
func (k *corrupter) fog(dst, src []float64) {
	n := plasmaSize(k.rows, k.cols)
	k.makePlasma(n, fogDecay)
	top := 0.0
	for _, v := range src {
		top = max(top, v)
	}
	f := top / (top + fogAmount)
	for r := range k.rows {
		for c := range k.cols {
			i := r*k.cols + c
			dst[i] = (src[i] + fogAmount*k.plasma[r*n+c]) * f
		}
	}
}
