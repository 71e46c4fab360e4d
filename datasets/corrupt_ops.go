package datasets

import "math"

// The affine, noise, blur, intensity and stroke corruptions of Corruption.

// affine writes to dst the image src seen through the inverse map taking
// the offset (dr, dc) of a pixel of dst from the image centre to the offset
// (m00·dr + m01·dc + tr, m10·dr + m11·dc + tc) in src, interpolated
// bilinearly, zero outside the frame.
func (k *corrupter) affine(dst, src []float64, m00, m01, m10, m11, tr, tc float64) {
	cr, cc := float64(k.rows-1)/2, float64(k.cols-1)/2
	for r := range k.rows {
		dr := float64(r) - cr
		for c := range k.cols {
			dc := float64(c) - cc
			dst[r*k.cols+c] = bilinear(src, k.rows, k.cols, cr+m00*dr+m01*dc+tr, cc+m10*dr+m11*dc+tc)
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

// impulseNoise sets each pixel, with probability amount, to 0 or 1
// (equally likely) and copies the others.
func (k *corrupter) impulseNoise(dst, src []float64, amount float64) {
	for i, v := range src {
		dst[i] = v
		if k.rng.Float64() < amount {
			dst[i] = float64(k.rng.IntN(2))
		}
	}
}

// maxBlurRadius is the largest kernel radius of gaussBlur: that of σ = 1.5,
// the widest blur of the suite.
const maxBlurRadius = 6

// gaussBlur writes to dst src convolved with a Gaussian of standard
// deviation sigma, separably, the kernel truncated at 4σ as scikit-image's
// is (radius ⌊4σ + 0.5⌋, at most maxBlurRadius). Outside the frame it takes
// the nearest pixel of the frame or, if normalised, no pixel at all: each
// pass then divides by the kernel's weight inside the frame. k.b is
// scratch, so neither dst nor src may be k.b; dst may be src.
func (k *corrupter) gaussBlur(dst, src []float64, sigma float64, normalised bool) {
	k.blurPass(k.b, src, sigma, normalised, false)
	k.blurPass(dst, k.b, sigma, normalised, true)
}

// blurPass writes to dst src convolved along the rows (horizontally) or,
// if vertical, along the columns with the kernel of gaussBlur. dst and src
// must not overlap.
func (k *corrupter) blurPass(dst, src []float64, sigma float64, normalised, vertical bool) {
	var w [2*maxBlurRadius + 1]float64
	rad := min(maxBlurRadius, int(4*sigma+0.5))
	for j := -rad; j <= rad; j++ {
		w[j+rad] = math.Exp(-float64(j*j) / (2 * sigma * sigma))
	}
	// Lines of n pixels, stride apart; across lines, step apart.
	n, stride, across, step := k.cols, 1, k.rows, k.cols
	if vertical {
		n, stride, across, step = k.rows, k.cols, k.cols, 1
	}
	for l := range across {
		base := l * step
		for i := range n {
			s, sum := 0.0, 0.0
			for j := -rad; j <= rad; j++ {
				p := i + j
				if p < 0 || p >= n {
					if normalised {
						continue
					}
					p = min(max(p, 0), n-1)
				}
				s += w[j+rad] * src[base+p*stride]
				sum += w[j+rad]
			}
			dst[base+i*stride] = s / sum
		}
	}
}

// glassBlur blurs along the columns, quantises to 8 bits, swaps pixels
// with random nearby ones and blurs again (see GlassBlur).
func (k *corrupter) glassBlur(dst, src []float64) {
	k.blurPass(k.a, src, glassSigma, false, true)
	for i, v := range k.a {
		k.a[i] = math.Floor(v*255) / 255
	}
	const d = glassReach
	for range glassPasses {
		for r := k.rows - d; r > d; r-- {
			for c := k.cols - d; c > d; c-- {
				if k.rng.IntN(2) == 0 {
					continue
				}
				dc := k.rng.IntN(2*d) - d
				dr := k.rng.IntN(2*d) - d
				i, j := r*k.cols+c, (r+dr)*k.cols+c+dc
				k.a[i], k.a[j] = k.a[j], k.a[i]
			}
		}
	}
	k.blurPass(dst, k.a, glassSigma, false, true)
}

// motionTaps is the number of taps of motionBlur's kernel: ImageMagick's
// kernel width for motionRadius.
const motionTaps = 2*motionRadius + 1

// motionBlur averages src along a ray at a random angle from each pixel
// with Gaussian weights (see MotionBlur).
func (k *corrupter) motionBlur(dst, src []float64) {
	sin, cos := math.Sincos(k.uniform(-motionMaxDegrees, motionMaxDegrees) * math.Pi / 180)
	var w [motionTaps]float64
	var dr, dc [motionTaps]int
	sum := 0.0
	for i := range motionTaps {
		t := float64(i)
		w[i] = math.Exp(-t * t / (2 * motionSigma * motionSigma))
		sum += w[i]
		dr[i] = int(math.Ceil(t*sin - 0.5))
		dc[i] = int(math.Ceil(t*cos - 0.5))
	}
	for r := range k.rows {
		for c := range k.cols {
			s := 0.0
			for i := range motionTaps {
				s += w[i] * k.near(src, r+dr[i], c+dc[i])
			}
			dst[r*k.cols+c] = s / sum
		}
	}
}

// stripe inverts the outer ⌊cols/4⌋ columns on each side.
func (k *corrupter) stripe(dst, src []float64) {
	w := k.cols / 4
	for r := range k.rows {
		for c := range k.cols {
			i := r*k.cols + c
			if c < w || c >= k.cols-w {
				dst[i] = 1 - src[i]
			} else {
				dst[i] = src[i]
			}
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
