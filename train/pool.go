package train

// pool is 2×2 average pooling (stride 2, odd edges dropped) of C×H×W
// images to C×(H/2)×(W/2).
type pool struct {
	c, h, w int
}

func (p pool) outLen() int { return p.c * (p.h / 2) * (p.w / 2) }

// blocks calls fn for every 2×2 block of n images, in order, with the
// index t of its top-left pixel in the images and the index o of its
// pixel in the pooled images; the block is t, t+1, t+w and t+w+1.
func (p pool) blocks(n int, fn func(t, o int)) {
	oh, ow := p.h/2, p.w/2
	o := 0
	for img := range n * p.c {
		for i := range oh {
			row := img*p.h*p.w + 2*i*p.w
			for j := range ow {
				fn(row+2*j, o)
				o++
			}
		}
	}
}

// forward writes the pooled images of the n images z into dst.
func (p pool) forward(dst, z []float64, n int) {
	p.blocks(n, func(t, o int) {
		dst[o] = 0.25 * (z[t] + z[t+1] + z[t+p.w] + z[t+p.w+1])
	})
}

// backward writes into dz the cotangent of the n images for the cotangent
// g of their pooled images.
func (p pool) backward(dz, g []float64, n int) {
	clear(dz)
	p.blocks(n, func(t, o int) {
		v := 0.25 * g[o]
		dz[t], dz[t+1], dz[t+p.w], dz[t+p.w+1] = v, v, v, v
	})
}
