package datasets

import "math"

// canny writes the Canny edges of src (0 or 1) to dst, as scikit-image's
// detector at its defaults finds them (see CannyEdges). A blank image
// stays blank.
func (k *corrupter) canny(dst, src []float64) {
	k.gaussBlur(k.a, src, cannySigma, true)
	// Sobel gradients along the rows (gx) and the columns (gy); the
	// frame's pixels are mirrored outside it, which for a reach of one
	// pixel is the nearest pixel.
	for r := range k.rows {
		for c := range k.cols {
			at := func(dr, dc int) float64 { return k.near(k.a, r+dr, c+dc) }
			gr := at(1, -1) + 2*at(1, 0) + at(1, 1) - at(-1, -1) - 2*at(-1, 0) - at(-1, 1)
			gc := at(-1, 1) + 2*at(0, 1) + at(1, 1) - at(-1, -1) - 2*at(0, -1) - at(1, -1)
			i := r*k.cols + c
			k.gx[i], k.gy[i] = gr, gc
			k.mag[i] = math.Hypot(gr, gc)
		}
	}
	// Non-maximum suppression into k.b (1: a local maximum), away from the
	// frame's border. The magnitude is interpolated on either side along
	// the gradient between the neighbour along its larger component and
	// the diagonal neighbour next to it.
	clear(k.b)
	for r := 1; r < k.rows-1; r++ {
		for c := 1; c < k.cols-1; c++ {
			i := r*k.cols + c
			m := k.mag[i]
			if m == 0 {
				continue
			}
			gr, gc := k.gx[i], k.gy[i]
			s := 1
			if gr*gc < 0 {
				s = -1
			}
			var ahead, behind float64
			if math.Abs(gr) >= math.Abs(gc) {
				w := math.Abs(gc) / math.Abs(gr)
				ahead = (1-w)*k.mag[i+k.cols] + w*k.mag[i+k.cols+s]
				behind = (1-w)*k.mag[i-k.cols] + w*k.mag[i-k.cols-s]
			} else {
				w := math.Abs(gr) / math.Abs(gc)
				ahead = (1-w)*k.mag[i+1] + w*k.mag[i+s*k.cols+1]
				behind = (1-w)*k.mag[i-1] + w*k.mag[i-s*k.cols-1]
			}
			if m >= ahead && m >= behind {
				k.b[i] = 1
			}
		}
	}
	// Hysteresis: local maxima at or above cannyHigh are edges, and so are
	// those at or above cannyLow connected to one through their 8
	// neighbours.
	clear(dst)
	k.stack = k.stack[:0]
	for i, lm := range k.b {
		if lm == 1 && k.mag[i] >= cannyHigh {
			dst[i] = 1
			k.stack = append(k.stack, i)
		}
	}
	for len(k.stack) > 0 {
		i := k.stack[len(k.stack)-1]
		k.stack = k.stack[:len(k.stack)-1]
		r, c := i/k.cols, i%k.cols
		for dr := -1; dr <= 1; dr++ {
			for dc := -1; dc <= 1; dc++ {
				r2, c2 := r+dr, c+dc
				if r2 < 0 || r2 >= k.rows || c2 < 0 || c2 >= k.cols {
					continue
				}
				j := r2*k.cols + c2
				if dst[j] == 0 && k.b[j] == 1 && k.mag[j] >= cannyLow {
					dst[j] = 1
					k.stack = append(k.stack, j)
				}
			}
		}
	}
}
