package solver

// MethodSpec names an entry of the registry (Methods), so that a
// configuration can hold a method and build it later from the problem's
// constants (MethodOptions). The zero value is unset: configurations that
// hold one fill in their default. MethodSpecs are compared with ==; their
// text form is the registry name, "" for an unset spec.
type MethodSpec struct {
	index int // 1 + the index of the entry in Methods(); 0: unset
}

// ParseMethodSpec returns the spec of the registry entry named name, or the
// unset spec for "". For another name its error is LookupMethod's, which
// wraps ErrUnknownMethod.
func ParseMethodSpec(name string) (MethodSpec, error) {
	if name == "" {
		return MethodSpec{}, nil
	}
	for i, m := range Methods() {
		if m.Name == name {
			return MethodSpec{i + 1}, nil
		}
	}
	_, err := LookupMethod(name)
	return MethodSpec{}, err
}

// MethodSpecOf returns the spec of the registry entry that builds methods
// of m's type (the entry named m.String()).
func MethodSpecOf(m Method) (MethodSpec, error) {
	if m == nil {
		_, err := LookupMethod("")
		return MethodSpec{}, err
	}
	return ParseMethodSpec(m.String())
}

// MethodSpecs returns the specs of the registry's entries, in the order of
// Methods.
func MethodSpecs() []MethodSpec {
	out := make([]MethodSpec, len(Methods()))
	for i := range out {
		out[i] = MethodSpec{i + 1}
	}
	return out
}

// IsZero reports whether s is unset.
func (s MethodSpec) IsZero() bool { return s.index == 0 }

// Info returns the registry entry s names. It panics if s is unset.
func (s MethodSpec) Info() MethodInfo {
	if s.index == 0 {
		panic("solver: Info of an unset MethodSpec")
	}
	return Methods()[s.index-1]
}

// New returns the method of the entry s names configured from o
// (MethodInfo.New). It panics if s is unset.
func (s MethodSpec) New(o MethodOptions) Method { return s.Info().New(o) }

// String returns the registry name of s, or "" if s is unset.
func (s MethodSpec) String() string {
	if s.IsZero() {
		return ""
	}
	return s.Info().Name
}

// MarshalText implements encoding.TextMarshaler with the registry name (""
// for an unset spec).
func (s MethodSpec) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseMethodSpec;
// on error it leaves s alone.
func (s *MethodSpec) UnmarshalText(text []byte) error {
	v, err := ParseMethodSpec(string(text))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
