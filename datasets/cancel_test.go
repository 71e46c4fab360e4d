package datasets

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// cancelReader cancels a context from inside its first Read and counts
// the Reads after it.
type cancelReader struct {
	r      io.Reader
	cancel context.CancelFunc
	reads  int
}

func (c *cancelReader) Read(p []byte) (int, error) {
	c.reads++
	n, err := c.r.Read(p)
	if c.reads == 1 {
		c.cancel()
	}
	return n, err
}

// TestReadStopsWhenCanceled decodes a 2.4 MB IDX image file through the
// reader of LoadIDX and cancels the context from inside the first read of
// the file: decoding stops with context.Canceled after that read.
func TestReadStopsWhenCanceled(t *testing.T) {
	im, _ := idxPair(3000, 28, 28)
	path := filepath.Join(t.TempDir(), "images-idx3-ubyte")
	require.NoError(t, os.WriteFile(path, im, 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cr *cancelReader
	_, err := readFileCtx(ctx, path, func(r io.Reader, size int64) (*Images, error) {
		cr = &cancelReader{r: r, cancel: cancel}
		return readImages(cr, path, size, nil)
	})
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.Equal(t, 2, cr.reads, "the read after the cancellation fails")
}

// TestDownloadStopsWhenCanceled cancels Fetch from inside the server once
// it has sent half of the first file, then holds the response open: Fetch
// returns an error wrapping context.Canceled and leaves no file.
func TestDownloadStopsWhenCanceled(t *testing.T) {
	files := standardSet(t, 20, 10, 28, 28)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := &fileServer{files: files, fail: func(w http.ResponseWriter, name string) bool {
		b := files[name]
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b[:len(b)/2])
		w.(http.Flusher).Flush()
		cancel()
		return true
	}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r)
		<-r.Context().Done() // the client went away
	}))
	defer ts.Close()
	checksums := map[string]string{}
	for name, b := range files {
		checksums[name] = "sha256:" + sha256Hex(b)
	}
	o := isolated(t)
	o.Download.BaseURL, o.Download.Client, o.Download.Checksums = ts.URL, ts.Client(), checksums
	_, err := Fetch(ctx, MNIST, o)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.Equal(t, 1, srv.requests)
	require.Empty(t, dirEntries(t, filepath.Join(o.Locate.CacheDir, MNIST)))
}
