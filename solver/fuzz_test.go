package solver_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/deqgo/deq/solver"
)

// FuzzParseNorm checks that ParseNorm never panics, that every error quotes
// the name it was given (or the shape at fault), and that every accepted name
// round-trips: the String of the norm parses back to a norm of the same type,
// exponent, dimension, constants and values. The shape is an int8 pair so
// that negative and zero sizes are explored while a Schatten norm's scratch
// space stays small. Its seed corpus is in testdata/fuzz/FuzzParseNorm; run
// it longer with
//
//	go test -run '^$' -fuzz '^FuzzParseNorm$' -fuzztime 60s ./solver/
func FuzzParseNorm(f *testing.F) {
	for _, name := range []string{"l2", "lp:4", "linf", "schatten:inf", "schatten:2.5", "LP:3", " l2 ", "lp:inf",
		"lp:1e400", "lp:nan", "lp:", "schatten", "l2:3", "lp:0x1p3", "lp:+Inf", "schatten:1e308", "lp:2.0000000000000001"} {
		f.Add(name, int8(3), int8(2))
	}
	f.Add("l2", int8(0), int8(1))
	f.Add("schatten:4", int8(-1), int8(5))
	f.Fuzz(func(t *testing.T, name string, rows, cols int8) {
		n, err := solver.ParseNorm(name, int(rows), int(cols))
		if err != nil {
			if n != nil {
				t.Fatalf("ParseNorm(%q) returned a norm with error %v", name, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "solver: ") {
				t.Fatalf("error %q lacks the package prefix", msg)
			}
			if rows > 0 && cols > 0 && !strings.Contains(msg, strconv.Quote(name)) {
				t.Fatalf("error %q does not quote the name %q", msg, name)
			}
			return
		}
		if rows < 1 || cols < 1 {
			t.Fatalf("ParseNorm(%q, %d, %d) accepted a non-positive shape", name, rows, cols)
		}
		if n.Len() != int(rows)*int(cols) {
			t.Fatalf("ParseNorm(%q): Len = %d, want %d", name, n.Len(), int(rows)*int(cols))
		}
		again, err := solver.ParseNorm(n.String(), int(rows), int(cols))
		if err != nil {
			t.Fatalf("ParseNorm(%q).String() = %q does not parse: %v", name, n.String(), err)
		}
		if again.String() != n.String() {
			t.Fatalf("round trip of %q: %q then %q", name, n.String(), again.String())
		}
		switch v := n.(type) {
		case solver.LP:
			if v.P() != again.(solver.LP).P() {
				t.Fatalf("round trip of %q changes p: %v then %v", name, v.P(), again.(solver.LP).P())
			}
		case solver.LInf:
			_ = again.(solver.LInf)
		case *solver.Schatten:
			if v.P() != again.(*solver.Schatten).P() {
				t.Fatalf("round trip of %q changes p", name)
			}
		default:
			t.Fatalf("ParseNorm(%q) returned a %T", name, n)
		}
		for _, c := range []float64{n.Kappa(), n.C()} {
			if !(c >= 1) || math.IsInf(c, 0) {
				t.Fatalf("%s: constant %v not in [1, ∞)", n, c)
			}
		}
		x := make([]float64, n.Len())
		for i := range x {
			x[i] = float64(i%7) - 2.5
		}
		if a, b := n.Norm(x), again.Norm(x); a != b || !(a > 0) || math.IsInf(a, 0) {
			t.Fatalf("%s: norms %v and %v of the same point", n, a, b)
		}
	})
}
