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
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/layers"
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
		{"retired wide cell, valid checksum", resum(edit(func(b []byte) []byte {
			i := strings.Index(string(b[:headerLen+ml]), `"Cell":"dense"`)
			require.Positive(t, i)
			copy(b[i:], `"Cell":"wide" `)
			return b
		})), ErrVersion},
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

// TestLoadConvWrittenBeforeDefaults: conv checkpoints written before
// DefaultConvShift stored a run without translations as Shift 0, before
// DefaultConvEncoderLayers a one-block encoder as EncoderLayers 0, and
// checkpoints of every cell written before the Precision type omitted
// the precision layers.Float64 (all three omitted from their metadata, or zero);
// they load as what they were written for, canonical, and resume exactly:
// re-saving the resumed run writes the checkpoint of the same run today.
// A float32 checkpoint was written then as it is now; one of a conv run at
// the default precision (DefaultConvPrecision) loads canonical too.
func TestLoadConvWrittenBeforeDefaults(t *testing.T) {
	sq := func() (*datasets.Dataset, *datasets.Dataset) {
		return squares("squares/train", 32, 8, 1), squares("squares/test", 16, 8, 2)
	}
	conv := Config{Seed: 5, Epochs: 1, BatchSize: 16, LR: 0.02, Model: ModelConfig{Cell: ConvCell, Channels: 4, EncoderLayers: 1, Precision: layers.Float64}, Augment: AugmentConfig{Shift: -1}}
	conv32 := conv
	conv32.Model.Precision = layers.DefaultPrecision
	dense := tinyConfig()
	dense.Epochs = 1
	for _, tc := range []struct {
		name      string
		cfg       Config
		data      func() (*datasets.Dataset, *datasets.Dataset)
		now, then string // the field as written now and, the same length, as checkpoints without the setting wrote it
		check     func(t *testing.T, ck *Checkpoint, trn *Trainer)
	}{
		{"shift", conv, sq, `"Shift":-1`, `"Shift": 0`, func(t *testing.T, ck *Checkpoint, _ *Trainer) {
			require.Equal(t, -1, ck.Config.Augment.Shift)
		}},
		{"encoder-layers", conv, sq, `"EncoderLayers":1`, `"EncoderLayers":0`, func(t *testing.T, ck *Checkpoint, trn *Trainer) {
			require.Equal(t, 1, ck.Config.Model.EncoderLayers)
			require.Equal(t, 1, trn.Model().conv.Layers())
		}},
		{"conv-float64", conv, sq, `,"Precision":"float64"`, strings.Repeat(" ", len(`,"Precision":"float64"`)), func(t *testing.T, ck *Checkpoint, trn *Trainer) {
			require.Equal(t, layers.Float64, ck.Config.Model.Precision)
			require.Equal(t, layers.Float64, trn.Model().conv.Precision())
		}},
		{"dense-float64", dense, func() (*datasets.Dataset, *datasets.Dataset) { return blobData(128, 50) },
			`,"Precision":"float64"`, strings.Repeat(" ", len(`,"Precision":"float64"`)), func(t *testing.T, ck *Checkpoint, trn *Trainer) {
				require.Equal(t, layers.Float64, ck.Config.Model.Precision)
				require.True(t, trn.Model().Proven())
			}},
		{"conv-float32", conv32, sq, `,"Precision":"float32"`, `,"Precision":"float32"`, func(t *testing.T, ck *Checkpoint, trn *Trainer) {
			require.Equal(t, DefaultConvPrecision, ck.Config.Model.Precision)
			require.Equal(t, layers.Float32, trn.Model().conv.Precision())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, te := tc.data()
			_, b := run(t, tc.cfg, tr, te, tempPath(t, "now.ckpt"))
			ml := int(binary.LittleEndian.Uint64(b[16:]))
			i := strings.Index(string(b[:headerLen+ml]), tc.now)
			require.Positive(t, i)
			require.Len(t, tc.then, len(tc.now))
			old := append([]byte(nil), b...)
			copy(old[i:], tc.then)
			path := filepath.Join(t.TempDir(), "old.ckpt")
			require.NoError(t, os.WriteFile(path, resum(old), 0o644))
			ck, err := Load(path)
			require.NoError(t, err)
			d, err := ck.Config.Defaults()
			require.NoError(t, err)
			require.Equal(t, ck.Config, d, "canonical after loading")
			trn, err := ck.Resume(tr, te, nil)
			require.NoError(t, err)
			tc.check(t, ck, trn)
			again := tempPath(t, "again.ckpt")
			require.NoError(t, trn.Save(again))
			b2, err := os.ReadFile(again)
			require.NoError(t, err)
			require.Equal(t, b, b2, "re-saved as the run writes it now")
		})
	}
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
// loop (see TestCheckpointSurvivesKill); its value is "path:base".
const crashEnv = "DEQ_TRAIN_CRASH_CHILD"

// crashStride separates the states of successive children: child base b
// writes encoder.W[0] = b·crashStride + i for i = 0, 1, 2, …, exact integers
// far below 2⁵³, so every state names the child and the save that wrote it.
const crashStride = 1 << 30

// crashConfig is the model of the crash children: a checkpoint of about
// 0.5 MB, so that a kill often lands inside a write.
func crashConfig() Config {
	cfg := tinyConfig()
	cfg.Model.Hidden, cfg.Model.Encoder = 64, 256
	return cfg
}

// crashTrainer is the trainer every crash child starts from.
func crashTrainer() (*Trainer, error) {
	tr, te := blobs("blobs/train", 128, 0.3, 1), blobs("blobs/test", 50, 0.3, 2)
	return New(crashConfig(), tr, te, nil)
}

// crashChild writes checkpoints to path forever, the i-th with
// encoder.W[0] = base·crashStride + i, printing "wrote i" once Save has
// returned for it.
func crashChild(arg string) {
	path, baseText, _ := strings.Cut(arg, ":")
	base, err := strconv.Atoi(baseText)
	if err == nil {
		var trn *Trainer
		if trn, err = crashTrainer(); err == nil {
			for i := 0; err == nil; i++ {
				trn.model.encW.data[0] = float64(base*crashStride + i)
				if err = trn.Save(path); err == nil {
					_, err = fmt.Printf("wrote %d\n", i)
				}
			}
		}
	}
	fmt.Println(err)
	os.Exit(1)
}

// checkKilledState checks the checkpoint a killed child left at path: it
// must load (so its checksum holds: no torn or half-renamed write), hold
// exactly the state the child started from except for encoder.W[0], and
// encoder.W[0] must be a state the child wrote: save last (the last one it
// reported) or last+1 (finished, but killed before reporting it). A child
// reports save i+1 only after Save returned for it, so nothing later can be
// on disk.
func checkKilledState(path string, ref *Model, base, last int) error {
	ck, err := Load(path)
	if err != nil {
		return err
	}
	got := ck.Model.encW.data[0]
	if got != float64(base*crashStride+last) && got != float64(base*crashStride+last+1) {
		return fmt.Errorf("encoder.W[0] = %v is not a state child %d wrote last (%d or %d)",
			got, base, base*crashStride+last, base*crashStride+last+1)
	}
	var diff error
	_, err = ck.Model.tensors(func(name string, _, _ int, x []float64) error {
		_, err := ref.tensors(func(rname string, _, _ int, y []float64) error {
			if rname != name || diff != nil {
				return nil
			}
			for i := range x {
				if name == "encoder.W" && i == 0 {
					continue
				}
				if x[i] != y[i] { // copies, not arithmetic: equal bit for bit
					diff = fmt.Errorf("%s[%d] = %v, the child wrote %v", name, i, x[i], y[i])
					return nil
				}
			}
			return nil
		})
		return err
	})
	if err != nil {
		return err
	}
	return diff
}

// TestCheckpointSurvivesKill kills a child process while it rewrites its
// checkpoint in a loop, each time after a random number (fixed seed) of
// saves that the child reported as finished, so the kill lands at an
// arbitrary point of a later write; after every kill the file on disk must
// load and hold one of the last two states the child wrote (see
// checkKilledState). Nothing depends on timing: the kill follows an event,
// and the check is exact whatever the child managed to write.
func TestCheckpointSurvivesKill(t *testing.T) {
	if arg := os.Getenv(crashEnv); arg != "" {
		crashChild(arg)
		return
	}
	ref, err := crashTrainer()
	require.NoError(t, err)
	path := tempPath(t, "crash.ckpt")
	rng := rand.New(rand.NewPCG(5, 5))
	for kill := range 8 {
		base := kill + 1
		cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpointSurvivesKill$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d", crashEnv, path, base))
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		sc := bufio.NewScanner(out)
		want := 1 + rng.IntN(12) // kill after this many finished saves
		last := -1
		for last+1 < want && sc.Scan() {
			_, err := fmt.Sscanf(sc.Text(), "wrote %d", &last)
			require.NoError(t, err, "child says %q", sc.Text())
		}
		require.NoError(t, cmd.Process.Kill())
		for sc.Scan() { // reports made before the kill
			_, err := fmt.Sscanf(sc.Text(), "wrote %d", &last)
			require.NoError(t, err, "child says %q", sc.Text())
		}
		_ = cmd.Wait() // killed: the error is the signal
		require.GreaterOrEqual(t, last, want-1, "the child reported %d finished saves before the kill", want)
		require.NoError(t, checkKilledState(path, ref.model, base, last), "after kill %d", kill)
	}
}

// TestCheckKilledStateCatchesBadFiles shows that the check of
// TestCheckpointSurvivesKill can fail: a torn write (a new checkpoint's
// first half over an old one), a file cut short, a state the child never
// wrote and a state of an earlier child are all refused.
func TestCheckKilledStateCatchesBadFiles(t *testing.T) {
	trn, err := crashTrainer()
	require.NoError(t, err)
	ref, err := crashTrainer()
	require.NoError(t, err)
	state := func(base, i int) []byte {
		trn.model.encW.data[0] = float64(base*crashStride + i)
		b, err := trn.marshal()
		require.NoError(t, err)
		return b
	}
	path := tempPath(t, "crash.ckpt")
	check := func(b []byte, base, last int) error {
		require.NoError(t, os.WriteFile(path, b, 0o644))
		return checkKilledState(path, ref.model, base, last)
	}
	require.NoError(t, check(state(3, 7), 3, 7))
	require.NoError(t, check(state(3, 8), 3, 7), "finished but not yet reported")
	old, cur := state(3, 7), state(3, 8)
	torn := append(append([]byte(nil), cur[:len(cur)/2]...), old[len(cur)/2:]...)
	require.ErrorIs(t, check(torn, 3, 7), ErrChecksum, "torn write")
	require.ErrorIs(t, check(cur[:len(cur)/3], 3, 7), ErrTruncated, "half-written file")
	require.ErrorContains(t, check(state(3, 9), 3, 7), "not a state child 3 wrote last")
	require.ErrorContains(t, check(state(3, 6), 3, 7), "not a state child 3 wrote last")
	require.ErrorContains(t, check(state(2, 8), 3, 7), "not a state child 3 wrote last")
	trn.model.outB.data[0]++
	require.ErrorContains(t, check(state(3, 7), 3, 7), "readout.b[0]")
}

// TestMinParamsIsALowerBound: ModelConfig.minParams, which Load uses to
// refuse implausibly small checkpoints, is at most the parameters of the
// model it describes, with and without a hidden readout layer (narrower
// than the classes too).
func TestMinParamsIsALowerBound(t *testing.T) {
	for _, c := range stepCases() {
		for _, r := range []int{0, 1, 5} {
			c.model.ReadoutHidden = r
			cfg := tightConfig(c, 8)
			trn, err := New(cfg, c.train, c.test, nil)
			require.NoError(t, err, "%s, readout %d", c.name, r)
			m := trn.model
			require.LessOrEqual(t, trn.cfg.Model.minParams(m.InputDim, m.Classes), float64(m.NumParams()), "%s, readout %d", c.name, r)
		}
	}
}

// TestMinParamsDoesNotOverflow: the bound is computed in float64 from the
// start, so that a damaged checkpoint's huge counts give a huge bound (and
// are refused as too small a file) instead of a wrapped, negative one.
func TestMinParamsDoesNotOverflow(t *testing.T) {
	c := ModelConfig{Cell: ConvCell, Channels: 2, Kernels: 2, EncoderLayers: math.MaxInt}
	require.Greater(t, c.minParams(784, 10), 1e19)
}
