package deqtest_test

import (
	"testing"

	"github.com/deqgo/deq/deqtest"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// myCell is a user's cell: a tanh Dense cell that claims its bound in ℓ2
// only.
type myCell struct{ *layers.Dense }

func (c myCell) Proven(n solver.Norm) bool {
	if b, ok := n.(*solver.Batched); ok {
		n = b.Example
	}
	lp, ok := n.(solver.LP)
	return ok && lp.P() == 2 && c.Dense.Proven(n)
}

// TestMyCell is how a user checks a cell: one call in a go test.
func TestMyCell(t *testing.T) {
	d, err := layers.NewDense(layers.DenseConfig{Hidden: 4, Input: 2, Activation: layers.Tanh, Lipschitz: layers.Constraint{Gamma: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	deqtest.CheckCell(t, myCell{d}, nil)
}
