package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Param is a trainable parameter of a cell: a rows×cols float64 matrix
// stored row-major, with a gradient of the same shape.
//
// Every graph a cell builds reads the parameter's value from the same
// backing slice (bound to it, or, for an Experts cell's W, copied from it
// before every run), so an update made in place (by a gorgonia solver, by
// Project, or through Data) is seen by the next evaluation. Param implements
// gorgonia.ValueGrad, so a model's parameters can be handed to gorgonia's
// solvers directly:
//
//	adam := gorgonia.NewAdamSolver(gorgonia.WithLearnRate(1e-3))
//	err := adam.Step(layers.ValueGrads(cell.Params()))
//
// The gorgonia solvers update the value in place and zero the gradient
// (code that replaces the tensors' backing arrays instead breaks the
// sharing). A
// cell is no longer guaranteed to be Lipschitz after an update: call its
// Project method after every optimiser step.
type Param struct {
	name       string
	rows, cols int
	value      *tensor.Dense
	grad       *tensor.Dense
	// The tensors' backing slices, kept because tensor.Dense.Data
	// allocates.
	data, gdata []float64
}

var _ G.ValueGrad = (*Param)(nil)

// newParam returns a zero rows×cols parameter.
func newParam(name string, rows, cols int) *Param {
	data := make([]float64, rows*cols)
	gdata := make([]float64, rows*cols)
	return &Param{
		name:  name,
		rows:  rows,
		cols:  cols,
		value: tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(data)),
		grad:  tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(gdata)),
		data:  data,
		gdata: gdata,
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

// Value implements gorgonia.ValueGrad. It returns the parameter's tensor,
// which shares its storage with Data.
func (p *Param) Value() G.Value { return p.value }

// Grad implements gorgonia.ValueGrad. It returns the gradient's tensor,
// which shares its storage with GradData. The error is always nil.
func (p *Param) Grad() (G.Value, error) { return p.grad, nil }

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
