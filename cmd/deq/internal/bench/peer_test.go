package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/train"
)

// fakePeer is a stand-in for the PyTorch peer: a shell script that checks
// the data directory's file sizes against meta.json and prints two epoch
// lines and a summary, as the peer does.
const fakePeer = `#!/bin/sh
set -e
while [ $# -gt 0 ]; do
	case "$1" in
	--data) dir=$2; shift ;;
	--model) model=$2; shift ;;
	--backward) backward=$2; shift ;;
	esac
	shift
done
n=$(sed 's/.*"train": *\([0-9]*\).*/\1/' "$dir/meta.json")
d=$(sed 's/.*"rows": *\([0-9]*\).*"cols": *\([0-9]*\).*/\1 \2/' "$dir/meta.json")
set -- $d
want=$((n * $1 * $2 * 4))
have=$(wc -c < "$dir/train-x.f32")
[ "$have" -eq "$want" ] || { echo "train-x.f32 has $have bytes, want $want" >&2; exit 3; }
[ "$(wc -c < "$dir/train-y.u8")" -eq "$n" ] || { echo "bad labels" >&2; exit 3; }
echo "loading $model"
echo '{"epoch": 1, "train_seconds": 3.0, "test_acc": 0.5, "fwd_iters_mean": 10, "bwd_iters_mean": 6, "fwd_met_frac": 1.0, "phases": {"encode": 0.5, "solve": 1, "readout": 0.25, "backward": 1, "step": 0.25, "eval": 1}}'
echo '{"epoch": 2, "train_seconds": 5.0, "test_acc": 0.75, "fwd_iters_mean": 20, "bwd_iters_mean": 8, "fwd_met_frac": 0.5, "phases": {"encode": 0.5, "solve": 2, "readout": 0.25, "backward": 2, "step": 0.25, "eval": 3}}'
if [ -n "$backward" ]; then
	echo '{"final": true, "blas": "openblas", "dtype": "float32", "seconds_per_epoch": 4.0, "test_acc": 0.75, "backward": "'"$backward"'"}'
else # as the script printed before its --backward option
	echo '{"final": true, "blas": "openblas", "dtype": "float32", "seconds_per_epoch": 4.0, "test_acc": 0.75}'
fi
`

func quickPeerData(t *testing.T) *datasets.Data {
	t.Helper()
	ts := trainedSetup{data: datasets.SyntheticName, trainLimit: 64, testLimit: 32}
	d, err := ts.open(context.Background(), 1)
	require.NoError(t, err)
	return d
}

// TestPeerData checks the exported data: shapes, labels, and images
// standardised with the training set's global statistics.
func TestPeerData(t *testing.T) {
	d := quickPeerData(t)
	dir := t.TempDir()
	require.NoError(t, writePeerData(dir, d, datasets.NormGlobal))
	var meta peerMeta
	js, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &meta))
	require.Equal(t, peerMeta{Rows: d.Train.Rows, Cols: d.Train.Cols, Train: 64, Test: 32, Classes: d.Train.Classes}, meta)

	norm, err := datasets.FitNormalizer(d.Train, datasets.NormGlobal)
	require.NoError(t, err)
	for name, set := range map[string]*datasets.Dataset{"train": d.Train, "test": d.Test} {
		x, err := os.ReadFile(filepath.Join(dir, name+"-x.f32"))
		require.NoError(t, err)
		require.Len(t, x, 4*len(set.X))
		for i, v := range set.X {
			got := float64(math.Float32frombits(binary.LittleEndian.Uint32(x[4*i:])))
			want := (v - norm.Mean[0]) / norm.Std[0]
			require.InDelta(t, want, got, 1e-6*(1+math.Abs(want)), "%s pixel %d", name, i)
		}
		y, err := os.ReadFile(filepath.Join(dir, name+"-y.u8"))
		require.NoError(t, err)
		require.Len(t, y, set.Len())
		for i, v := range set.Y {
			require.Equal(t, v, int(y[i]))
		}
	}
	// The data set itself is left as it was: raw pixels in [0, 1].
	require.True(t, slices.ContainsFunc(d.Train.X, func(v float64) bool { return v > 0.5 }))
	require.False(t, slices.ContainsFunc(d.Train.X, func(v float64) bool { return v < 0 }))
}

// TestPeerFake runs the exported data through a fake peer and parses its
// output.
func TestPeerFake(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	d := quickPeerData(t)
	dir := t.TempDir()
	require.NoError(t, writePeerData(dir, d, datasets.NormGlobal))
	script := filepath.Join(t.TempDir(), "peer.sh")
	require.NoError(t, os.WriteFile(script, []byte(fakePeer), 0o755))
	r := &peerRunner{python: "/bin/sh", script: script}
	var lines []string
	side, err := r.train(context.Background(), dir, []string{"--model", "dense"}, func(l string) { lines = append(lines, l) })
	require.NoError(t, err)
	require.Len(t, lines, 3)
	require.Equal(t, []float64{3, 5}, side.EpochSeconds)
	require.Equal(t, []float64{0.5, 0.75}, side.EpochTestAcc)
	require.InDelta(t, 4, side.SecondsPerEpoch, 1e-12)
	require.InDelta(t, 0.75, side.TestAcc, 1e-12)
	require.InDelta(t, 15, side.FwdIters, 1e-12)
	require.InDelta(t, 7, side.BwdIters, 1e-12)
	require.InDelta(t, 0.75, side.FwdMet, 1e-12)
	require.Equal(t, "openblas", side.BLAS)
	require.Equal(t, "float32", side.DType)
	require.Equal(t, "implicit", side.Backward, "a summary without the field: implicit")
	require.Equal(t, &report.Phases{Encode: 0.5, Solve: 1.5, Readout: 0.25, Backward: 1.5, Step: 0.25, Eval: 2}, side.Phases, "the mean over the epochs")
	side, err = r.train(context.Background(), dir, []string{"--model", "conv", "--backward", "jacobian-free"}, nil)
	require.NoError(t, err)
	require.Equal(t, "jacobian-free", side.Backward)

	// A peer that fails reports its last error line.
	require.NoError(t, os.Remove(filepath.Join(dir, "train-y.u8")))
	_, err = r.train(context.Background(), dir, nil, nil)
	require.ErrorContains(t, err, "bad labels")
}

// TestParsePeerPhases: an epoch line without phases (a script that does
// not time them) leaves the side without a breakdown.
func TestParsePeerPhases(t *testing.T) {
	out := `{"epoch": 1, "train_seconds": 3.0, "test_acc": 0.5, "phases": {"encode": 1, "solve": 1, "readout": 0, "backward": 1, "step": 0, "eval": 1}}
{"epoch": 2, "train_seconds": 3.0, "test_acc": 0.5}
{"final": true, "seconds_per_epoch": 3.0, "test_acc": 0.5}
`
	side, err := parsePeer(strings.NewReader(out), nil)
	require.NoError(t, err)
	require.Nil(t, side.Phases)
	side, err = parsePeer(strings.NewReader(strings.Replace(out, `"epoch": 2,`, `"epoch": 2, "phases": {"encode": 3},`, 1)), nil)
	require.NoError(t, err)
	require.NotNil(t, side.Phases)
	require.InDelta(t, 2, side.Phases.Encode, 1e-12)
	require.InDelta(t, 0.5, side.Phases.Solve, 1e-12)
	require.Nil(t, side.PhaseCPU, "no processor times")

	// Processor times on every epoch line: their means.
	cpu := strings.NewReplacer(`"epoch": 1,`, `"epoch": 1, "phase_cpu": {"solve": 1.5},`,
		`"epoch": 2,`, `"epoch": 2, "phases": {"encode": 3}, "phase_cpu": {"solve": 2.5},`).Replace(out)
	side, err = parsePeer(strings.NewReader(cpu), nil)
	require.NoError(t, err)
	require.NotNil(t, side.PhaseCPU)
	require.InDelta(t, 2, side.PhaseCPU.Solve, 1e-12)
	// On one line only: none.
	side, err = parsePeer(strings.NewReader(strings.Replace(cpu, `"phase_cpu": {"solve": 1.5},`, "", 1)), nil)
	require.NoError(t, err)
	require.Nil(t, side.PhaseCPU)
}

// TestPeerArgs checks that the peer's arguments mirror the conv defaults.
func TestPeerArgs(t *testing.T) {
	cfg, err := train.Config{Model: train.ModelConfig{Cell: train.ConvCell}}.Defaults()
	require.NoError(t, err)
	args := strings.Join(peerArgs("conv", cfg, 3), " ")
	for _, want := range []string{
		"--batch 64", "--lr 0.002", "--conv-style deq", "--channels 48", "--groups 8",
		"--tol 0.01", "--max-iter 30", "--backward-tol 0.001", "--backward-iter 20", "--threads 3", fmt.Sprintf("--encoder-layers %d", train.DefaultConvEncoderLayers),
	} {
		require.Contains(t, args, want)
	}
	// The conv default's Jacobian-free gradient is mirrored; implicit is
	// the peer's default and passes nothing.
	require.Contains(t, args, "--backward jacobian-free")
	cfg.Model.EncoderLayers = 1
	cfg.Backward.Mode = deq.Implicit
	args = strings.Join(peerArgs("conv-implicit", cfg, 3), " ")
	require.Contains(t, args, "--encoder-layers 1")
	require.Contains(t, args, "--model conv ")
	require.NotContains(t, args, "--backward ")
}

// TestPeerQuick runs the quick section: our side always, the peer when
// Python with torch is installed.
func TestPeerQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("trains six small models")
	}
	s, err := Config{Quick: true, Sections: []string{sectionPeer}}.withDefaults()
	require.NoError(t, err)
	rep, err := peer(context.Background(), s)
	require.NoError(t, err)
	require.Len(t, rep.Models, 3)
	for _, m := range rep.Models {
		require.Empty(t, m.Note, m.Model)
		require.NotNil(t, m.Ours, m.Model)
		require.Len(t, m.Ours.EpochSeconds, 1)
		require.Greater(t, m.Ours.FwdIters, 0.0)
		require.NotNil(t, m.Ours.Phases, m.Model)
		require.Positive(t, m.Ours.Phases.Solve, m.Model)
		require.LessOrEqual(t, m.Ours.Phases.Train(), m.Ours.SecondsPerEpoch+1e-6, m.Model)
	}
	if rep.Note != "" {
		t.Skipf("peer part skipped: %s", rep.Note)
	}
	gradient := map[string]string{"dense": "implicit", "conv": "jacobian-free", "conv-implicit": "implicit"}
	for _, m := range rep.Models {
		require.NotNil(t, m.Peer, m.Model)
		require.Len(t, m.Peer.EpochSeconds, 1)
		require.Equal(t, gradient[m.Model], m.Peer.Backward, m.Model)
		require.Equal(t, gradient[m.Model], m.Ours.Backward, m.Model)
		require.Equal(t, "float32", m.Peer.DType)
		require.NotNil(t, m.Peer.Phases, m.Model)
		require.Positive(t, m.Peer.Phases.Solve, m.Model)
		require.Positive(t, m.Peer.Phases.Backward, m.Model)
		require.LessOrEqual(t, m.Peer.Phases.Train(), m.Peer.SecondsPerEpoch+1e-6, m.Model)
		r := float64(m.Ratio())
		require.False(t, math.IsNaN(r) || r <= 0, "ratio %v", r)
	}
}

// TestPeerModelsSelects: Config.PeerModels keeps only the models it names,
// empty keeps all three, and an unknown name is an error naming the field.
func TestPeerModelsSelects(t *testing.T) {
	for _, quick := range []bool{false, true} {
		s, err := Config{Quick: quick}.withDefaults()
		require.NoError(t, err)
		require.Len(t, s.peerSetups(), 3)
		s, err = Config{Quick: quick, PeerModels: []string{"dense"}}.withDefaults()
		require.NoError(t, err)
		setups := s.peerSetups()
		require.Len(t, setups, 1)
		require.Equal(t, "dense", setups[0].model)
	}
	_, err := Config{PeerModels: []string{"wide"}}.withDefaults()
	require.ErrorContains(t, err, "Config.PeerModels")
	_, err = Config{PeerThreads: -1}.withDefaults()
	require.ErrorContains(t, err, "Config.PeerThreads")
}

// TestPeerPrecision: Config.PeerPrecision sets our side's precision in
// both models, and its zero value keeps `deq train`'s defaults (float32
// for the conv model, float64 for the dense one); the summary names
// float32 products; a value that is not a precision is an error naming
// the field.
func TestPeerPrecision(t *testing.T) {
	for _, tc := range []struct {
		p           layers.Precision
		dense, conv layers.Precision // after Defaults
	}{
		{layers.DefaultPrecision, layers.Float64, train.DefaultConvPrecision},
		{layers.Float64, layers.Float64, layers.Float64},
		{layers.Float32, layers.Float32, layers.Float32},
	} {
		s, err := Config{PeerPrecision: tc.p}.withDefaults()
		require.NoError(t, err)
		setups := s.peerSetups()
		require.Len(t, setups, 3)
		for _, ps := range setups {
			require.Equal(t, tc.p, ps.cfg.Model.Precision, ps.model)
			cfg := ps.cfg
			cfg.Epochs = ps.epochs
			cfg, err := cfg.Defaults()
			require.NoError(t, err)
			want := tc.dense
			if isConv(ps.model) {
				want = tc.conv
			}
			require.Equal(t, want, cfg.Model.Precision, "%s, PeerPrecision %q", ps.model, tc.p)
			require.Equal(t, want == layers.Float32, strings.Contains(peerSummary(cfg), "matrix products in float32"), ps.model)
		}
	}
	_, err := Config{PeerPrecision: 7}.withDefaults()
	require.ErrorContains(t, err, "Config.PeerPrecision")
}

// TestPeerSplit: Config.PeerSplit sets the dense model's Split (two
// parts by default), leaves the conv models' alone, is named in the
// summary, and a negative value is an error naming the field.
func TestPeerSplit(t *testing.T) {
	for _, tc := range []struct{ split, want int }{{0, DefaultPeerSplit}, {1, 1}, {3, 3}} {
		s, err := Config{PeerSplit: tc.split}.withDefaults()
		require.NoError(t, err)
		for _, ps := range s.peerSetups() {
			cfg := ps.cfg
			cfg.Epochs = ps.epochs
			cfg, err := cfg.Defaults()
			require.NoError(t, err, ps.model)
			want := tc.want
			if isConv(ps.model) {
				want = 0
			}
			require.Equal(t, want, cfg.Split, ps.model)
			require.Equal(t, want > 1, strings.Contains(peerSummary(cfg), fmt.Sprintf("`--split %d`", want)), ps.model)
		}
	}
	_, err := Config{PeerSplit: -1}.withDefaults()
	require.ErrorContains(t, err, "Config.PeerSplit")
}

// TestUnavailableNote checks that a data set that is not installed is
// reported with the command that fetches it, not the library's field.
func TestUnavailableNote(t *testing.T) {
	ni := &datasets.NotInstalledError{Name: "mnist-10k", Dirs: []string{"/a", "/b"}}
	note := unavailableNote("mnist-10k", fmt.Errorf("bench: data %q: %w", "mnist-10k", ni))
	require.Equal(t, "data set mnist-10k is not installed (searched /a, /b); fetch it once with deq train --data mnist-10k --download", note)
	require.NotContains(t, note, "Options.")
	require.Equal(t, "data set x unavailable (boom)", unavailableNote("x", errors.New("boom")))
}
