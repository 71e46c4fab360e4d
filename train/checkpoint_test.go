package train

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// savedCheckpoint trains a tiny model for one epoch and returns its
// checkpoint's path and bytes.
func savedCheckpoint(t testing.TB) (string, []byte) {
	t.Helper()
	tr, te := blobData(128, 50)
	cfg := tinyConfig()
	cfg.Epochs = 1
	path := tempPath(t, "run.ckpt")
	_, b := run(t, cfg, tr, te, path)
	return path, b
}

// resum recomputes the checksum of a checkpoint whose body was edited.
func resum(b []byte) []byte {
	b = append([]byte(nil), b...)
	n := len(b) - sha256.Size
	s := sha256.Sum256(b[:n])
	copy(b[n:], s[:])
	return b
}

func TestLoadRefusesDamagedCheckpoints(t *testing.T) {
	_, good := savedCheckpoint(t)
	_, err := decode(good)
	require.NoError(t, err)
	ml := int(binary.LittleEndian.Uint64(good[16:]))
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"magic prefix", good[:5], ErrTruncated},
		{"header cut", good[:20], ErrTruncated},
		{"metadata cut", good[:headerLen+ml/2], ErrTruncated},
		{"data cut", good[:len(good)-sha256.Size-3], ErrTruncated},
		{"checksum cut", good[:len(good)-1], ErrTruncated},
		{"other file", []byte("PK\x03\x04 a zip file, say"), ErrNotCheckpoint},
		{"other magic", edit(func(b []byte) []byte { b[3] ^= 0x20; return b }), ErrNotCheckpoint},
		{"version 2", resum(edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 2); return b })), ErrVersion},
		{"version 0, checksum stale", edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 0); return b }), ErrVersion},
		{"metadata byte", edit(func(b []byte) []byte { b[headerLen+10] ^= 1; return b }), ErrChecksum},
		{"data byte", edit(func(b []byte) []byte { b[headerLen+ml+100] ^= 0x40; return b }), ErrChecksum},
		{"checksum byte", edit(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrChecksum},
		{"trailing bytes", append(append([]byte(nil), good...), 0), ErrCorrupt},
		{"length field too large", edit(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[24:], 1<<40); return b }), ErrTruncated},
		{"length field impossible", edit(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[24:], 13); return b }), ErrCorrupt},
		{"length field huge", edit(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[16:], math.MaxUint64); return b }), ErrCorrupt},
		{"NaN tensor, valid checksum", resum(edit(func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[headerLen+ml:], math.Float64bits(math.NaN()))
			return b
		})), ErrCorrupt},
		{"metadata not JSON, valid checksum", resum(edit(func(b []byte) []byte { b[headerLen] = '['; return b })), ErrCorrupt},
		{"epoch beyond the run, valid checksum", resum(edit(func(b []byte) []byte {
			i := strings.Index(string(b[:headerLen+ml]), `"epoch":1,`)
			require.Positive(t, i)
			b[i+len(`"epoch":`)] = '7'
			return b
		})), ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.ckpt")
			require.NoError(t, os.WriteFile(path, tc.b, 0o644))
			_, err := Load(path)
			require.ErrorIs(t, err, tc.want)
			require.Contains(t, err.Error(), path, "the error names the file")
		})
	}
	// Every truncation is refused.
	rng := rand.New(rand.NewPCG(1, 1))
	for range 50 {
		n := rng.IntN(len(good))
		_, err := decode(good[:n])
		require.ErrorIs(t, err, ErrTruncated, "length %d", n)
	}
	_, err = Load(filepath.Join(t.TempDir(), "missing.ckpt"))
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = Load(t.TempDir())
	require.ErrorIs(t, err, ErrNotCheckpoint)
}

func TestSaveRefusesNonFiniteState(t *testing.T) {
	tr, te := blobData(128, 50)
	path := tempPath(t, "a.ckpt")
	trn, err := New(tinyConfig(), tr, te, nil)
	require.NoError(t, err)
	require.NoError(t, trn.Save(path))
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	trn.model.cell.Params()[0].Data()[2] = math.Inf(-1)
	err = trn.Save(path)
	require.ErrorContains(t, err, "cell.W holds NaN or Inf")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after, "the previous checkpoint is left alone")
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

func TestCheckpointRoundTrip(t *testing.T) {
	path, b := savedCheckpoint(t)
	ck, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, 1, ck.Epoch)
	require.Equal(t, 0, ck.Batch)
	require.Equal(t, 4, ck.Steps)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	// Re-saving a resumed trainer reproduces the file.
	tr, te := blobData(128, 50)
	trn, err := ck.Resume(tr, te, nil)
	require.NoError(t, err)
	again := tempPath(t, "again.ckpt")
	require.NoError(t, trn.Save(again))
	b2, err := os.ReadFile(again)
	require.NoError(t, err)
	require.Equal(t, b, b2)
}

// crashEnv makes the test binary a child that writes checkpoints in a
// loop (see TestCheckpointSurvivesKill).
const crashEnv = "DEQ_TRAIN_CRASH_CHILD"

// crashChild writes checkpoints to path forever, each with encoder.W[0]
// one larger than the last, printing "ready" after the first.
func crashChild(path string) {
	tr, te := blobs("blobs/train", 128, 0.3, 1), blobs("blobs/test", 50, 0.3, 2)
	cfg := tinyConfig()
	cfg.Model.Hidden, cfg.Model.Encoder = 64, 256 // a checkpoint of about 0.5 MB
	trn, err := New(cfg, tr, te, nil)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	for i := 0; ; i++ {
		if err := trn.Save(path); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		if i == 0 {
			fmt.Println("ready")
		}
		trn.model.encW.data[0]++
	}
}

// TestCheckpointSurvivesKill kills a child process at random moments while
// it rewrites its checkpoint in a loop; after every kill the file on disk
// must load, holding one of the states the child wrote.
func TestCheckpointSurvivesKill(t *testing.T) {
	if path := os.Getenv(crashEnv); path != "" {
		crashChild(path)
		return
	}
	path := tempPath(t, "crash.ckpt")
	rng := rand.New(rand.NewPCG(5, 5))
	var first float64
	states := map[float64]bool{}
	for kill := range 8 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpointSurvivesKill$")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		line, err := bufio.NewReader(out).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "ready\n", line)
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		require.NoError(t, cmd.Process.Kill())
		cmd.Wait()
		ck, err := Load(path)
		require.NoError(t, err, "after kill %d", kill)
		v := ck.Model.encW.data[0]
		if kill == 0 {
			first = v
		}
		steps := v - first
		require.Equal(t, math.Trunc(steps), steps, "a state the child wrote")
		states[v] = true
	}
	require.Greater(t, len(states), 1, "the children wrote several states")
}
