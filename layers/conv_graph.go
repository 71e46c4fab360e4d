package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// convGraph is the gorgonia graph of a Conv cell on a batch of n examples
// (tensors in NCHW order), bound to the cell's parameters. EvalGraph runs
// its forward pass; the tests differentiate it to check the fused VJPs.
type convGraph struct {
	g              *G.ExprGraph
	z, x           []float64 // input backings
	zN, xN         *G.Node
	wN, bN         []*G.Node // per kernel: C×C×3×3 and 1×C×1×1
	vN, gN         []*G.Node // WeightNorm only, per kernel: C×9C and C×1
	uN             *G.Node   // InputConv only
	scaleN, shiftN *G.Node   // GroupNorm only
	out            *G.Node
	fwd            *machine
}

// newGraph builds the graph of f(z, x) for n examples.
func (c *Conv) newGraph(n int) (*convGraph, error) {
	cg := &convGraph{g: G.NewGraph()}
	gr := graph{cg.g}
	h, w := c.geom.H, c.geom.W
	img := c.c * c.hw
	err := build("Conv", func() {
		cg.z = make([]float64, n*img)
		cg.x = make([]float64, n*img)
		cg.zN = gr.bound("z", tensorOver(cg.z, n, c.c, h, w))
		cg.xN = gr.bound("x", tensorOver(cg.x, n, c.c, h, w))
		ks := tensor.Shape{ConvKernel, ConvKernel}
		conv2d := func(im, filter *G.Node) *G.Node {
			return G.Must(G.Conv2d(im, filter, ks, []int{1, 1}, []int{1, 1}, []int{1, 1}))
		}
		u := cg.xN
		if c.inputConv {
			cg.uN = gr.bound("U", tensorOver(c.u.Data(), c.c, c.c, ConvKernel, ConvKernel))
			u = conv2d(cg.xN, cg.uN)
		}
		if c.groups > 0 {
			cg.scaleN = gr.bound("gn.scale", tensorOver(c.nscale.Data(), 1, c.c, 1, 1))
			cg.shiftN = gr.bound("gn.shift", tensorOver(c.nshift.Data(), 1, c.c, 1, 1))
		}
		var sum *G.Node
		for m := range c.m {
			var wm *G.Node
			if c.rp != nil {
				wm = cg.weightNormNode(gr, c, m)
			} else {
				wm = gr.bound(fmt.Sprintf("W%d", m), tensorOver(c.kernel(m), c.c, c.c, ConvKernel, ConvKernel))
			}
			bm := gr.bound(fmt.Sprintf("b%d", m), tensorOver(c.b.Data()[m*c.c:(m+1)*c.c], 1, c.c, 1, 1))
			cg.wN = append(cg.wN, wm)
			cg.bN = append(cg.bN, bm)
			pre := G.Must(G.Add(conv2d(cg.zN, wm), u))
			pre = G.Must(G.BroadcastAdd(pre, bm, nil, []byte{0, 2, 3}))
			t := c.act.node(pre)
			if c.groups > 0 {
				t = groupNormNode(t, n, c.c, h, w, c.groups, cg.scaleN, cg.shiftN)
			}
			if sum == nil {
				sum = t
			} else {
				sum = G.Must(G.Add(sum, t))
			}
		}
		if c.m > 1 {
			sum = G.Must(G.Mul(sum, G.NewConstant(1/float64(c.m))))
		}
		cg.out = sum
		cg.fwd = newMachine(cg.g, cg.out)
	})
	if err != nil {
		return nil, err
	}
	return cg, nil
}

// weightNormNode returns the graph of kernel m under WeightNorm,
// g_m ⊙ V_m/‖V_m‖ row by row, as a C×C×3×3 node, and records the V_m and
// g_m nodes it binds.
func (cg *convGraph) weightNormNode(gr graph, c *Conv, m int) *G.Node {
	r := c.geom.ColRows()
	v := gr.bound(fmt.Sprintf("V%d", m), tensorOver(c.rp.v.Data()[m*c.c*r:(m+1)*c.c*r], c.c, r))
	g := gr.bound(fmt.Sprintf("g%d", m), tensorOver(c.rp.g.Data()[m*c.c:(m+1)*c.c], c.c, 1))
	cg.vN = append(cg.vN, v)
	cg.gN = append(cg.gN, g)
	norm := G.Must(G.Sqrt(G.Must(G.Sum(G.Must(G.Square(v)), 1))))
	f := G.Must(G.HadamardDiv(g, G.Must(G.Reshape(norm, tensor.Shape{c.c, 1}))))
	w := G.Must(G.BroadcastHadamardProd(v, f, nil, []byte{1}))
	return G.Must(G.Reshape(w, tensor.Shape{c.c, c.c, ConvKernel, ConvKernel}))
}

// groupNormNode returns the graph of the GroupNorm (in groups groups) of t,
// an n×c×h×w node, with the 1×c×1×1 scale and shift.
func groupNormNode(t *G.Node, n, c, h, w, groups int, scale, shift *G.Node) *G.Node {
	// The product by one copies t: gorgonia's Reshape aliases its input, and
	// the ops that follow would otherwise overwrite the value that t's own
	// gradient (tanh's, for one) reads.
	t = G.Must(G.Mul(t, G.NewConstant(1.0)))
	per := c / groups * h * w
	r := G.Must(G.Reshape(t, tensor.Shape{n, groups, per}))
	mean := G.Must(G.Reshape(G.Must(G.Mean(r, 2)), tensor.Shape{n, groups, 1}))
	d := G.Must(G.BroadcastSub(r, mean, nil, []byte{2}))
	vr := G.Must(G.Mean(G.Must(G.Square(d)), 2))
	rstd := G.Must(G.Pow(G.Must(G.Add(vr, G.NewConstant(convNormEps))), G.NewConstant(-0.5)))
	rstd = G.Must(G.Reshape(rstd, tensor.Shape{n, groups, 1}))
	xhat := G.Must(G.BroadcastHadamardProd(d, rstd, nil, []byte{2}))
	xhat = G.Must(G.Reshape(xhat, tensor.Shape{n, c, h, w}))
	y := G.Must(G.BroadcastHadamardProd(xhat, scale, nil, []byte{0, 2, 3}))
	return G.Must(G.BroadcastAdd(y, shift, nil, []byte{0, 2, 3}))
}
