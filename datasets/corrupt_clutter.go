package datasets

import "math"

// The clutter corruptions of Corruption: lines, blobs and edges.

// ink draws into img, with max, a disc or a thick segment: every pixel
// gets min(1, max(0, radius + 0.5 − d))·level where d is its distance to
// the segment from (y0, x0) to (y1, x1).
func (k *corrupter) ink(img []float64, y0, x0, y1, x1, radius, level float64) {
	vy, vx := y1-y0, x1-x0
	l2 := vy*vy + vx*vx
	// Only pixels within radius + 0.5 of the segment get ink.
	m := radius + 1
	r0, r1 := max(0, int(math.Floor(min(y0, y1)-m))), min(k.rows-1, int(math.Ceil(max(y0, y1)+m)))
	c0, c1 := max(0, int(math.Floor(min(x0, x1)-m))), min(k.cols-1, int(math.Ceil(max(x0, x1)+m)))
	for r := r0; r <= r1; r++ {
		for c := c0; c <= c1; c++ {
			py, px := float64(r)-y0, float64(c)-x0
			t := 0.0
			if l2 > 0 {
				t = min(max((py*vy+px*vx)/l2, 0), 1)
			}
			d := math.Hypot(py-t*vy, px-t*vx)
			if v := min(1, max(0, radius+0.5-d)) * level; v > img[r*k.cols+c] {
				img[r*k.cols+c] = v
			}
		}
	}
}

// edgePoints returns two points on opposite edges of the image (left and
// right, or top and bottom).
func (k *corrupter) edgePoints() (y0, x0, y1, x1 float64) {
	h, w := float64(k.rows-1), float64(k.cols-1)
	if k.rng.IntN(2) == 0 {
		return k.uniform(0, h), 0, k.uniform(0, h), w
	}
	return 0, k.uniform(0, w), h, k.uniform(0, w)
}

// dottedLine draws dots of radius 0.5 every 3 pixels along a line between
// opposite edges.
func (k *corrupter) dottedLine(dst, src []float64) {
	copy(dst, src)
	y0, x0, y1, x1 := k.edgePoints()
	n := int(math.Hypot(y1-y0, x1-x0) / 3)
	for i := 0; i <= n; i++ {
		t := float64(i) / float64(max(n, 1))
		y, x := y0+t*(y1-y0), x0+t*(x1-x0)
		k.ink(dst, y, x, y, x, 0.5, 1)
	}
}

// zigzag draws a polyline of 3 to 5 segments of radius 0.3 across the
// image whose vertices alternate between two random levels.
func (k *corrupter) zigzag(dst, src []float64) {
	copy(dst, src)
	h, w := float64(k.rows-1), float64(k.cols-1)
	segs := 3 + k.rng.IntN(3)
	a, b := k.uniform(0.1*h, 0.5*h), k.uniform(0.5*h, 0.9*h)
	vertical := k.rng.IntN(2) == 0
	py, px := a, 0.0
	for s := 1; s <= segs; s++ {
		y, x := b, w*float64(s)/float64(segs)
		if s%2 == 0 {
			y = a
		}
		if vertical {
			k.ink(dst, px, py, x, y, 0.3, 1)
		} else {
			k.ink(dst, py, px, y, x, 0.3, 1)
		}
		py, px = y, x
	}
}

// spatter draws 4 to 8 blobs of radius 0.8 to 1.8 and level 0.6 to 1 at
// random places.
func (k *corrupter) spatter(dst, src []float64) {
	copy(dst, src)
	for range 4 + k.rng.IntN(5) {
		y, x := k.uniform(0, float64(k.rows-1)), k.uniform(0, float64(k.cols-1))
		k.ink(dst, y, x, y, x, k.uniform(0.8, 1.8), k.uniform(0.6, 1))
	}
}

// canny writes the Canny edges of src (0 or 1) to dst: a Gaussian blur
// (σ = 1), Sobel gradients, non-maximum suppression along the gradient
// direction (quantised to 45°), and hysteresis: pixels above 0.3 of the
// largest magnitude are edges, and so are those above 0.1 connected to one
// through their 8 neighbours. A blank image stays blank.
func (k *corrupter) canny(dst, src []float64) {
	k.gaussBlur(k.a, src, 1)
	top := 0.0
	for r := range k.rows {
		for c := range k.cols {
			at := func(dr, dc int) float64 { return k.at(k.a, r+dr, c+dc) }
			gx := at(-1, 1) + 2*at(0, 1) + at(1, 1) - at(-1, -1) - 2*at(0, -1) - at(1, -1)
			gy := at(1, -1) + 2*at(1, 0) + at(1, 1) - at(-1, -1) - 2*at(-1, 0) - at(-1, 1)
			i := r*k.cols + c
			k.gx[i], k.gy[i] = gx, gy
			k.mag[i] = math.Hypot(gx, gy)
			top = max(top, k.mag[i])
		}
	}
	clear(dst)
	if top == 0 {
		return
	}
	// Non-maximum suppression into k.b.
	for r := range k.rows {
		for c := range k.cols {
			i := r*k.cols + c
			m := k.mag[i]
			k.b[i] = 0
			if m == 0 {
				continue
			}
			// The neighbour along the gradient: angle in [0°, 180°)
			// quantised to 0, 45, 90 or 135 degrees (rows grow down).
			deg := math.Mod(math.Atan2(k.gy[i], k.gx[i])*180/math.Pi+180, 180)
			var dr, dc int
			switch {
			case deg < 22.5 || deg >= 157.5:
				dc = 1
			case deg < 67.5:
				dr, dc = 1, 1
			case deg < 112.5:
				dr = 1
			default:
				dr, dc = 1, -1
			}
			if m >= k.at(k.mag, r+dr, c+dc) && m >= k.at(k.mag, r-dr, c-dc) {
				k.b[i] = m
			}
		}
	}
	lo, hi := 0.1*top, 0.3*top
	k.stack = k.stack[:0]
	for i, m := range k.b {
		if m >= hi {
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
				if dst[j] == 0 && k.b[j] >= lo {
					dst[j] = 1
					k.stack = append(k.stack, j)
				}
			}
		}
	}
}
