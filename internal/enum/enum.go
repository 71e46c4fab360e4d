package enum

import (
	"fmt"
	"path"
	"reflect"
	"strings"
)

// Table names the values 0, 1, …, len(Names)−1 of an enumeration E and
// words its errors. A Table is written once, as a package's unexported
// variable, and only read after that.
type Table[E ~int] struct {
	// Type is the name of the Go type: Name(v) is "Type(v)" for a value
	// without a name. Empty means E's own name.
	Type string
	// Names are the names of the values 0, 1, ….
	Names []string
	// Unknown is wrapped by the errors of Parse, which read
	// `<Unknown> <What> "name" (want <Want>)`.
	Unknown error
	// What, if not empty, says in the errors of Parse what the values are.
	What string
	// Want lists the accepted names in the errors of Parse; empty means
	// Names joined by ", " ("a, b, c"), or, with Or, "a, b or c".
	Want string
	// Or joins the last two of Names with " or " where Want is empty.
	Or bool
	// Invalid is the format of the error of Check (and so of MarshalText)
	// for a value without a name; its one verb, %s, is given Name(v).
	// Empty means "<package>: cannot marshal %s", with the name of E's
	// package.
	Invalid string
}

// typeName returns t.Type, or E's own name when it is empty.
func (t Table[E]) typeName() string {
	if t.Type != "" {
		return t.Type
	}
	return reflect.TypeFor[E]().Name()
}

// invalid returns t.Invalid, or its default when it is empty.
func (t Table[E]) invalid() string {
	if t.Invalid != "" {
		return t.Invalid
	}
	return path.Base(reflect.TypeFor[E]().PkgPath()) + ": cannot marshal %s"
}

// Valid reports whether v has a name.
func (t Table[E]) Valid(v E) bool { return v >= 0 && int(v) < len(t.Names) }

// Values returns the values 0, 1, …, len(Names)−1, in order.
func (t Table[E]) Values() []E {
	out := make([]E, len(t.Names))
	for i := range out {
		out[i] = E(i)
	}
	return out
}

// Name returns the name of v, or "Type(v)" for a value without one.
func (t Table[E]) Name(v E) string {
	if !t.Valid(v) {
		return fmt.Sprintf("%s(%d)", t.typeName(), int(v))
	}
	return t.Names[v]
}

// Parse returns the value named s, or an error wrapping Unknown.
func (t Table[E]) Parse(s string) (E, error) {
	for i, n := range t.Names {
		if n == s {
			return E(i), nil
		}
	}
	want := t.Want
	if want == "" {
		want = strings.Join(t.Names, ", ")
		if last := len(t.Names) - 1; t.Or && last > 0 {
			want = strings.Join(t.Names[:last], ", ") + " or " + t.Names[last]
		}
	}
	if t.What != "" {
		return 0, fmt.Errorf("%w %s %q (want %s)", t.Unknown, t.What, s, want)
	}
	return 0, fmt.Errorf("%w %q (want %s)", t.Unknown, s, want)
}

// Check returns nil if v has a name, and otherwise the error Invalid words.
func (t Table[E]) Check(v E) error {
	if !t.Valid(v) {
		return fmt.Errorf(t.invalid(), t.Name(v))
	}
	return nil
}

// MarshalText returns the name of v, or the error of Check for a value
// without one.
func (t Table[E]) MarshalText(v E) ([]byte, error) {
	if err := t.Check(v); err != nil {
		return nil, err
	}
	return []byte(t.Names[v]), nil
}

// UnmarshalText sets *dst to the value named text; on error it leaves *dst
// alone.
func (t Table[E]) UnmarshalText(dst *E, text []byte) error {
	return Unmarshal(dst, text, t.Parse)
}

// Unmarshal sets *dst to parse(string(text)); on error it leaves *dst
// alone. It serves the UnmarshalText of types whose Parse does more than a
// Table's.
func Unmarshal[T any](dst *T, text []byte, parse func(string) (T, error)) error {
	v, err := parse(string(text))
	if err != nil {
		return err
	}
	*dst = v
	return nil
}
