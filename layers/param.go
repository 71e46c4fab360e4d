package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Param is a trainable parameter of a cell: a rows×cols float64 matrix
// stored row-major in a plain slice (Data), with a gradient of the same
// shape in another (GradData). A cell written by hand creates its
// parameters with NewParam and needs nothing else: package deq and train
// read and update the two slices.
//
// The gorgonia views are optional: Value and Grad return tensors over the
// same two slices, made on first use, so that a model's parameters can be
// handed to gorgonia's solvers and graphs directly:
//
//	adam := gorgonia.NewAdamSolver(gorgonia.WithLearnRate(1e-3))
//	err := adam.Step(layers.ValueGrads(cell.Params()))
//
// Every graph a cell builds reads the parameter's value from the same
// backing slice (bound to it, or, for an Experts cell's W, copied from it
// before every run), so an update made in place (by a gorgonia solver, by
// Project, or through Data) is seen by the next evaluation. The gorgonia
// solvers update the value in place and zero the gradient (code that
// replaces the tensors' backing arrays instead breaks the sharing). A
// cell is no longer guaranteed to be Lipschitz after an update: call its
// Project method after every optimiser step.
type Param struct {
	name        string
	rows, cols  int
	data, gdata []float64
	// The gorgonia views of data and gdata, made on first use.
	value, grad *tensor.Dense
}

var _ G.ValueGrad = (*Param)(nil)

// NewParam returns a zero rows×cols parameter named name (a name unique
// within its cell, which checkpoints and error messages use). A vector
// parameter is 1×n. NewParam panics if name is empty or a dimension is not
// positive.
func NewParam(name string, rows, cols int) *Param {
	switch {
	case name == "":
		panic("layers: NewParam: empty name")
	case rows < 1 || cols < 1:
		panic(fmt.Sprintf("layers: NewParam(%q): shape %d×%d must be positive", name, rows, cols))
	}
	return newParam(name, rows, cols)
}

// newParam returns a zero rows×cols parameter.
func newParam(name string, rows, cols int) *Param {
	return &Param{
		name:  name,
		rows:  rows,
		cols:  cols,
		data:  make([]float64, rows*cols),
		gdata: make([]float64, rows*cols),
	}
}

// Name returns the parameter's name, unique within its cell.
func (p *Param) Name() string { return p.name }

// Dims returns the shape of the parameter.
func (p *Param) Dims() (rows, cols int) { return p.rows, p.cols }

// Data returns the parameter's values, row-major. The slice is the
// parameter's storage: writes to it change the parameter.
func (p *Param) Data() []float64 { return p.data }

// GradData returns the gradient, row-major. The slice is the gradient's
// storage.
func (p *Param) GradData() []float64 { return p.gdata }

// ZeroGrad sets the gradient to zero.
func (p *Param) ZeroGrad() {
	clear(p.GradData())
}

// tensor returns the gorgonia view of the value, making it on first use.
func (p *Param) tensor() *tensor.Dense {
	if p.value == nil {
		p.value = view(p.data, p.rows, p.cols)
	}
	return p.value
}

// Value implements gorgonia.ValueGrad. It returns a rows×cols tensor over
// Data's storage.
func (p *Param) Value() G.Value { return p.tensor() }

// Grad implements gorgonia.ValueGrad. It returns a rows×cols tensor over
// GradData's storage. The error is always nil.
func (p *Param) Grad() (G.Value, error) {
	if p.grad == nil {
		p.grad = view(p.gdata, p.rows, p.cols)
	}
	return p.grad, nil
}

// String returns the name and shape.
func (p *Param) String() string { return fmt.Sprintf("%s(%d×%d)", p.name, p.rows, p.cols) }

// ValueGrads converts parameters to the gorgonia.ValueGrad slice that
// gorgonia's solvers take.
func ValueGrads(ps []*Param) []G.ValueGrad {
	out := make([]G.ValueGrad, len(ps))
	for i, p := range ps {
		out[i] = p
	}
	return out
}

// ZeroGrads zeroes the gradients of ps.
func ZeroGrads(ps []*Param) {
	for _, p := range ps {
		p.ZeroGrad()
	}
}

// view returns a tensor of shape rows×cols over data, sharing it.
func view(data []float64, rows, cols int) *tensor.Dense {
	return tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(data))
}

// tensorOver returns a tensor of the given shape over data, sharing it.
func tensorOver(data []float64, shape ...int) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
}
