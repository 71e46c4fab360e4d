package solver

import "fmt"

// enum is the shape of the package's enumerations: Model, Status, CertRule and
// Aggregate.
type enum interface {
	~int
	fmt.Stringer
}

// enumName returns names[v], the name of v, or typ(v) for a value outside
// names: the String of every enumeration of the package.
func enumName[E ~int](v E, names []string, typ string) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, int(v))
}

// parseEnum returns the value of first..last whose String is name, or an
// error wrapping sentinel that lists the accepted names as want.
func parseEnum[E enum](name string, first, last E, sentinel error, want string) (E, error) {
	for v := first; v <= last; v++ {
		if v.String() == name {
			return v, nil
		}
	}
	return 0, fmt.Errorf("%w %q (want %s)", sentinel, name, want)
}

// marshalEnum returns v's name, or an error if v is outside first..last.
func marshalEnum[E enum](v, first, last E) ([]byte, error) {
	if v < first || v > last {
		return nil, fmt.Errorf("solver: cannot marshal %v", v)
	}
	return []byte(v.String()), nil
}

// unmarshalEnum sets *dst to the value parse returns for b.
func unmarshalEnum[E enum](dst *E, b []byte, parse func(string) (E, error)) error {
	v, err := parse(string(b))
	if err != nil {
		return err
	}
	*dst = v
	return nil
}
