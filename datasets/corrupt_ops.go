package datasets

import "math"

// The affine, noise, blur, stroke and intensity corruptions of Corruption.

// affine writes to dst the image src seen through the inverse map taking
// the offset (dy, dx) of a pixel of dst from the image centre to the
// offset (m00·(dy−ty) + m01·(dx−tx), m10·(dy−ty) + m11·(dx−tx)) in src,
// interpolated bilinearly.
func (k *corrupter) affine(dst, src []float64, m00, m01, m10, m11, ty, tx float64) {
	cr, cc := float64(k.rows-1)/2, float64(k.cols-1)/2
	for r := range k.rows {
		dy := float64(r) - cr - ty
		for c := range k.cols {
			dx := float64(c) - cc - tx
			dst[r*k.cols+c] = bilinear(src, k.rows, k.cols, cr+m00*dy+m01*dx, cc+m10*dy+m11*dx)
		}
	}
}

// shotNoise replaces each pixel p by a Poisson draw of mean lambda·p,
// divided by lambda.
func (k *corrupter) shotNoise(dst, src []float64, lambda float64) {
	for i, v := range src {
		m := lambda * v
		if m == 0 {
			dst[i] = 0
			continue
		}
		// Knuth's method: m is at most lambda, so exp(−m) does not
		// underflow and the loop takes about m + 1 steps.
		limit, p, n := math.Exp(-m), 1.0, -1
		for p > limit {
			p *= k.rng.Float64()
			n++
		}
		dst[i] = float64(n) / lambda
	}
}

// impulseNoise sets a fraction amount of the pixels to 0 or 1 (equally
// likely) and copies the others.
func (k *corrupter) impulseNoise(dst, src []float64, amount float64) {
	for i, v := range src {
		dst[i] = v
		if k.rng.Float64() < amount {
			dst[i] = float64(k.rng.IntN(2))
		}
	}
}

// gaussBlur writes to dst src convolved with a Gaussian of standard
// deviation sigma (truncated at 3σ, at most 3 pixels), zero outside the
// frame; k.b is scratch, so neither dst nor src may be k.b.
func (k *corrupter) gaussBlur(dst, src []float64, sigma float64) {
	var w [7]float64
	rad := min(3, int(math.Ceil(3*sigma)))
	for j := -rad; j <= rad; j++ {
		w[j+rad] = math.Exp(-float64(j*j) / (2 * sigma * sigma))
	}
	sum := 0.0
	for _, v := range w[:2*rad+1] {
		sum += v
	}
	for r := range k.rows {
		for c := range k.cols {
			s := 0.0
			for j := -rad; j <= rad; j++ {
				s += w[j+rad] * k.at(src, r, c+j)
			}
			k.b[r*k.cols+c] = s / sum
		}
	}
	for r := range k.rows {
		for c := range k.cols {
			s := 0.0
			for j := -rad; j <= rad; j++ {
				s += w[j+rad] * k.at(k.b, r+j, c)
			}
			dst[r*k.cols+c] = s / sum
		}
	}
}

// glassBlur blurs, swaps each pixel with a random neighbour at most one
// pixel away (two passes, from the bottom row up), and blurs again.
func (k *corrupter) glassBlur(dst, src []float64) {
	const sigma = 0.7
	k.gaussBlur(k.a, src, sigma)
	for range 2 {
		for r := k.rows - 1; r >= 0; r-- {
			for c := k.cols - 1; c >= 0; c-- {
				r2 := min(max(r+k.rng.IntN(3)-1, 0), k.rows-1)
				c2 := min(max(c+k.rng.IntN(3)-1, 0), k.cols-1)
				i, j := r*k.cols+c, r2*k.cols+c2
				k.a[i], k.a[j] = k.a[j], k.a[i]
			}
		}
	}
	k.gaussBlur(dst, k.a, sigma)
}

// motionBlur averages src along a line of 5 to 9 pixels at a random
// angle through each pixel.
func (k *corrupter) motionBlur(dst, src []float64) {
	length := 5 + k.rng.IntN(5)
	sin, cos := math.Sincos(k.uniform(0, math.Pi))
	half := float64(length-1) / 2
	for r := range k.rows {
		for c := range k.cols {
			s := 0.0
			for t := range length {
				d := float64(t) - half
				s += bilinear(src, k.rows, k.cols, float64(r)+d*sin, float64(c)+d*cos)
			}
			dst[r*k.cols+c] = s / float64(length)
		}
	}
}

// morphPlus writes to dst the grey dilation (max) or erosion (min) of src
// by the plus-shaped element: the pixel and its four neighbours, zero
// outside the frame.
func (k *corrupter) morphPlus(dst, src []float64, dilate bool) {
	for r := range k.rows {
		for c := range k.cols {
			v := src[r*k.cols+c]
			for _, n := range [4]float64{k.at(src, r-1, c), k.at(src, r+1, c), k.at(src, r, c-1), k.at(src, r, c+1)} {
				if dilate {
					v = max(v, n)
				} else {
					v = min(v, n)
				}
			}
			dst[r*k.cols+c] = v
		}
	}
}

// morphSquare writes to dst the grey dilation of src by the 3×3 square.
func (k *corrupter) morphSquare(dst, src []float64) {
	for r := range k.rows {
		for c := range k.cols {
			v := 0.0
			for dr := -1; dr <= 1; dr++ {
				for dc := -1; dc <= 1; dc++ {
					v = max(v, k.at(src, r+dr, c+dc))
				}
			}
			dst[r*k.cols+c] = v
		}
	}
}

// stripe inverts a vertical band 4 to 6 pixels wide in the middle half of
// the image.
func (k *corrupter) stripe(dst, src []float64) {
	w := min(4+k.rng.IntN(3), k.cols)
	lo := k.cols / 4
	hi := max(lo, 3*k.cols/4-w)
	c0 := lo + k.rng.IntN(hi-lo+1)
	copy(dst, src)
	for r := range k.rows {
		for c := c0; c < min(c0+w, k.cols); c++ {
			dst[r*k.cols+c] = 1 - src[r*k.cols+c]
		}
	}
}

// fog adds smooth noise: random values on a 4×4 and a 7×7 grid,
// bilinearly upsampled to the image, weighted 2/3 and 1/3, scaled by an
// amplitude of 0.35 to 0.5.
func (k *corrupter) fog(dst, src []float64) {
	amp := k.uniform(0.35, 0.5)
	copy(dst, src)
	for _, g := range [2]struct {
		n int
		w float64
	}{{4, 2.0 / 3}, {7, 1.0 / 3}} {
		var grid [49]float64
		for i := range g.n * g.n {
			grid[i] = k.rng.Float64()
		}
		for r := range k.rows {
			y := float64(r) / float64(max(k.rows-1, 1)) * float64(g.n-1)
			for c := range k.cols {
				x := float64(c) / float64(max(k.cols-1, 1)) * float64(g.n-1)
				dst[r*k.cols+c] += amp * g.w * bilinear(grid[:g.n*g.n], g.n, g.n, y, x)
			}
		}
	}
}
