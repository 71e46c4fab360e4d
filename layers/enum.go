package layers

import "errors"

// errUnknown is wrapped by the errors of ParseActivation and
// ParseNormalization for a name they do not accept.
var errUnknown = errors.New("layers: unknown")
