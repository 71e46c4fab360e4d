package solver

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// NormKind is the family of a NormSpec.
type NormKind int

const (
	// NormL2, the zero value, is the Euclidean norm (LP with p = 2).
	NormL2 NormKind = iota
	// NormLP is the ℓp norm (LP) with exponent NormSpec.P.
	NormLP
	// NormLInf is the ℓ∞ norm (LInf).
	NormLInf
	// NormSchatten is the Schatten-p norm (Schatten) with exponent
	// NormSpec.P.
	NormSchatten
)

// NormSpec names a norm independently of the shape of the points it
// measures, so that a configuration can hold it: Norm binds it to a shape.
// The zero value is ℓ2. Its text form is the canonical name ParseNorm
// accepts ("l2", "lp:P", "linf", "schatten:P"); ParseNormSpec returns the
// canonical spec of a name (ℓp with p = 2 as NormL2, p = ∞ as NormLInf), so
// that specs of the same norm compare equal with ==.
type NormSpec struct {
	// Kind is the norm's family.
	Kind NormKind
	// P is the exponent of NormLP (in [2, ∞)) and NormSchatten (in
	// [2, ∞]); the other kinds ignore it.
	P float64
}

// ParseNormSpec returns the canonical spec of the norm named name, in the
// syntax of ParseNorm. Its errors are *NormError values, those ParseNorm
// returns for the name.
func ParseNormSpec(name string) (NormSpec, error) {
	kind, arg, hasArg := strings.Cut(strings.ToLower(strings.TrimSpace(name)), ":")
	parseP := func() (float64, error) {
		if !hasArg {
			return 0, normErr(name, "needs an exponent, as in %s:4", kind)
		}
		if arg == "inf" {
			return math.Inf(1), nil
		}
		p, err := strconv.ParseFloat(arg, 64)
		if errors.Is(err, strconv.ErrRange) {
			return 0, normErr(name, "exponent %q out of the range of float64", arg)
		}
		if err != nil || math.IsNaN(p) {
			return 0, normErr(name, "exponent %q is not a number", arg)
		}
		return p, nil
	}
	var s NormSpec
	switch kind {
	case "l2":
		if hasArg {
			return NormSpec{}, unknownNorm(name)
		}
	case "lp":
		p, err := parseP()
		if err != nil {
			return NormSpec{}, err
		}
		switch {
		case math.IsInf(p, 1):
			s = NormSpec{Kind: NormLInf}
		case p != 2:
			s = NormSpec{Kind: NormLP, P: p}
		}
	case "linf":
		if hasArg {
			return NormSpec{}, unknownNorm(name)
		}
		s = NormSpec{Kind: NormLInf}
	case "schatten":
		p, err := parseP()
		if err != nil {
			return NormSpec{}, err
		}
		s = NormSpec{Kind: NormSchatten, P: p}
	default:
		return NormSpec{}, unknownNorm(name)
	}
	if _, err := named(name)(s.Norm(1, 1)); err != nil {
		return NormSpec{}, err
	}
	return s, nil
}

// unknownNorm returns the *NormError of ParseNorm for a name it does not
// know.
func unknownNorm(name string) error {
	return &NormError{Name: name, Reason: "unknown norm (want l2, lp:P, linf or schatten:P)", parsed: true}
}

// Norm returns the norm s names on rows×cols points (cols = 1 for vectors;
// the ℓp norms treat a matrix as a vector of rows·cols entries). Its errors
// are *NormError values.
func (s NormSpec) Norm(rows, cols int) (Norm, error) {
	if rows < 1 || cols < 1 {
		return nil, normErr("", "norm shape %d×%d must be positive", rows, cols)
	}
	if rows > math.MaxInt/cols {
		return nil, normErr("", "norm shape %d×%d overflows the dimension", rows, cols)
	}
	switch s.Kind {
	case NormL2:
		return NewLP(2, rows*cols)
	case NormLP:
		return NewLP(s.P, rows*cols)
	case NormLInf:
		return NewLInf(rows * cols)
	case NormSchatten:
		n, err := NewSchatten(s.P, rows, cols)
		if err != nil {
			return nil, err // not a nil *Schatten in a non-nil Norm
		}
		return n, nil
	}
	return nil, normErr("", "NormSpec of unknown kind %d", int(s.Kind))
}

// String returns the canonical name of s, the String of its norms.
func (s NormSpec) String() string {
	switch s.Kind {
	case NormL2:
		return "l2"
	case NormLP:
		if s.P == 2 {
			return "l2"
		}
		return "lp:" + strconv.FormatFloat(s.P, 'g', -1, 64)
	case NormLInf:
		return "linf"
	case NormSchatten:
		if math.IsInf(s.P, 1) {
			return "schatten:inf"
		}
		return "schatten:" + strconv.FormatFloat(s.P, 'g', -1, 64)
	}
	return fmt.Sprintf("NormSpec(%d, %v)", int(s.Kind), s.P)
}

// MarshalText implements encoding.TextMarshaler with the canonical name. It
// returns the *NormError of Norm for a spec that names no norm.
func (s NormSpec) MarshalText() ([]byte, error) {
	if _, err := s.Norm(1, 1); err != nil {
		return nil, err
	}
	return []byte(s.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseNormSpec; on
// error it leaves s alone.
func (s *NormSpec) UnmarshalText(text []byte) error {
	v, err := ParseNormSpec(string(text))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
