package layers

import (
	"fmt"
	"strings"
)

// enumNames describes an enumeration of this package whose values are 0,
// 1, …: their names, and the words of its errors. It gives the String,
// Parse, MarshalText and UnmarshalText of Activation and Normalization.
type enumNames[E ~int] struct {
	typ     string   // the Go type, for String of a value without a name
	what    string   // what the values are, for an unknown name
	field   string   // the configuration field, for an invalid value
	invalid string   // what a valid value is, for an invalid value
	names   []string // the names of 0, 1, …
}

// name returns the name of v, or Type(v) for a value without one.
func (e enumNames[E]) name(v E) string {
	if v < 0 || int(v) >= len(e.names) {
		return fmt.Sprintf("%s(%d)", e.typ, int(v))
	}
	return e.names[v]
}

// parse returns the value named s.
func (e enumNames[E]) parse(s string) (E, error) {
	for i, n := range e.names {
		if n == s {
			return E(i), nil
		}
	}
	last := len(e.names) - 1
	want := strings.Join(e.names[:last], ", ") + " or " + e.names[last]
	return 0, fmt.Errorf("layers: unknown %s %q (want %s)", e.what, s, want)
}

// valid returns an error naming the field unless v has a name.
func (e enumNames[E]) valid(v E) error {
	if v < 0 || int(v) >= len(e.names) {
		return fmt.Errorf("layers: %s = %v is not %s", e.field, e.name(v), e.invalid)
	}
	return nil
}

// marshal returns the name of v, or an error for a value without one.
func (e enumNames[E]) marshal(v E) ([]byte, error) {
	if err := e.valid(v); err != nil {
		return nil, err
	}
	return []byte(e.names[v]), nil
}

// unmarshal sets *v to the value named text.
func (e enumNames[E]) unmarshal(v *E, text []byte) error {
	p, err := e.parse(string(text))
	if err == nil {
		*v = p
	}
	return err
}
