package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRegimeMarkdown checks the regime table: one line per row, the best
// sampled over the best exact method among those that certified every
// run, and the trained cells' training and held-out accuracy, once per M.
func TestRegimeMarkdown(t *testing.T) {
	methods := func(sampled float64, certified int) []RegimeMethod {
		return []RegimeMethod{
			{Method: "broyden", TermEvals: 2048, Exact: 2, Seconds: 0.1, Certified: 1, Runs: 1},
			{Method: "vrghal", Sampled: true, TermEvals: sampled, Exact: sampled / 1024, Seconds: 0.1, Certified: certified, Runs: 3},
		}
	}
	rg := &RegimeReport{
		Hidden: 64, Input: 64, Batch: 128, Seeds: 3,
		Trained: &RegimeTraining{Data: "synthetic", Images: 4000, Epochs: 1, BatchSize: 128, LR: 2e-3, Activation: "relu", Forward: "broyden"},
		Rows: []RegimeRow{
			{Cell: "fresh", Units: 1024, Eps: 1e-1, TermRelVar: 0.5, Contraction: 0.003, Methods: methods(3072, 3)},
			{Cell: RegimeTrained, Units: 1024, Eps: 1e-1, TermRelVar: 0.01, Contraction: 0.02, TestAcc: 0.625, Methods: methods(1024, 3)},
			{Cell: RegimeTrained, Units: 1024, Eps: 1e-2, TermRelVar: 0.01, Contraction: 0.02, TestAcc: 0.625, Methods: methods(1024, 2)},
		},
	}
	var b strings.Builder
	writeRegime(&b, rg)
	md := b.String()
	require.Contains(t, md, "| fresh | 1024 | 1e-1 | 0.5 | 0.003 | 2.00, 0.10s | 3.00, 0.10s | 1.50× |\n")
	require.Contains(t, md, "| trained | 1024 | 1e-1 | 0.01 | 0.02 | 2.00, 0.10s | 1.00, 0.10s | 0.50× |\n")
	require.Contains(t, md, "| trained | 1024 | 1e-2 | 0.01 | 0.02 | 2.00, 0.10s | 1.00, 0.10s (2/3 certified) | – |\n")
	require.Contains(t, md, "trained by package train for 1 epoch on 4000 synthetic images")
	require.Equal(t, 1, strings.Count(md, "M = 1024: 62.5%"))

	rg.Trained = nil
	rg.Rows = rg.Rows[:1]
	b.Reset()
	writeRegime(&b, rg)
	require.NotContains(t, b.String(), "*trained*")
}

// TestPeerThreadsText checks that the peer section states the peer's
// torch threads as they ran, and nothing when the peer did not run.
func TestPeerThreadsText(t *testing.T) {
	for _, tc := range []struct {
		threads int
		want    string
	}{{0, "(`scripts/torch_peer.py`) on"}, {1, "(`scripts/torch_peer.py`, 1 thread) on"}, {2, "(`scripts/torch_peer.py`, 2 threads) on"}} {
		var b strings.Builder
		writePeer(&b, &PeerReport{Threads: tc.threads})
		require.Contains(t, b.String(), tc.want, "threads %d", tc.threads)
	}
}

// TestPeerCrossRatio: with both conv models run, the section compares our
// conv defaults with the implicit peer (best epochs 60/20 = 3, means 70/25
// = 2.8); without the implicit model's peer it says nothing.
func TestPeerCrossRatio(t *testing.T) {
	side := func(secs ...float64) *PeerSide {
		var sum float64
		for _, s := range secs {
			sum += s
		}
		return &PeerSide{EpochSeconds: secs, SecondsPerEpoch: sum / float64(len(secs)), TestAcc: 0.98}
	}
	pr := &PeerReport{Models: []PeerModel{
		{Model: "conv", Ours: side(20, 30), Peer: side(40, 40), Target: PeerConvTarget},
		{Model: "conv-implicit", Ours: side(35, 35), Peer: side(60, 80), Target: PeerConvImplicitTarget},
	}}
	var b strings.Builder
	writePeer(&b, pr)
	require.Contains(t, b.String(), "### conv defaults against the implicit peer")
	require.Contains(t, b.String(), "**3.00×** on the fastest epochs, 2.80× on the means")
	pr.Models[1].Peer = nil
	b.Reset()
	writePeer(&b, pr)
	require.NotContains(t, b.String(), "against the implicit peer")
}

// TestPeerPhasesTable: the per-phase table has a row per side that
// reported its phases, with the columns of every phase and the
// unattributed rest; without phases there is no table. A side that
// reported its processor times also gets a row of cores per phase.
func TestPeerPhasesTable(t *testing.T) {
	ph := &Phases{Encode: 0.5, Solve: 2, Readout: 0.25, Backward: 1.5, Step: 0.25, Eval: 0.75}
	pr := &PeerReport{Models: []PeerModel{{Model: "dense", Target: PeerDenseTarget,
		Ours: &PeerSide{SecondsPerEpoch: 5, EpochSeconds: []float64{5}, Phases: ph},
		Peer: &PeerSide{SecondsPerEpoch: 6, EpochSeconds: []float64{6}, Phases: &Phases{Encode: 1, Solve: 2, Readout: 0.5, Backward: 2, Step: 0.5, Eval: 1}},
	}}}
	var b strings.Builder
	writePeer(&b, pr)
	out := b.String()
	header := "| | encoder | forward solve | readout and loss | backward | optimiser | other | evaluation |"
	require.Contains(t, out, header)
	table := out[strings.Index(out, header):]
	lines := strings.Split(table, "\n")
	require.GreaterOrEqual(t, len(lines), 4)
	require.Equal(t, "| deq (Go) | 0.5 | 2 | 0.25 | 1.5 | 0.25 | 0.5 | 0.75 |", lines[2])
	require.Equal(t, "| PyTorch peer | 1 | 2 | 0.5 | 2 | 0.5 | 0 | 1 |", lines[3])
	require.Equal(t, 8, strings.Count(lines[2], "|")-1, "a cell per column")
	require.NotContains(t, out, "Cores kept busy", "no processor times, no cores table")

	// With processor times, a table of the cores each phase kept busy.
	pr.Models[0].Ours.PhaseCPU = &Phases{Encode: 0.75, Solve: 3.8, Readout: 0.25, Backward: 2.7, Step: 0.25, Eval: 1.5}
	b.Reset()
	writePeer(&b, pr)
	out = b.String()
	cores := "| | encoder | forward solve | readout and loss | backward | optimiser | training phases | evaluation |"
	require.Contains(t, out, cores)
	lines = strings.Split(out[strings.Index(out, cores):], "\n")
	require.Equal(t, "| deq (Go) | 1.5 | 1.9 | 1.0 | 1.8 | 1.0 | 1.7 | 2.0 |", lines[2])
	require.Empty(t, lines[3], "only the side that reported processor times")
	pr.Models[0].Ours.PhaseCPU = nil

	pr.Models[0].Peer.Phases = nil
	b.Reset()
	writePeer(&b, pr)
	require.Contains(t, b.String(), "| deq (Go) | 0.5 |")
	require.NotContains(t, b.String(), "| PyTorch peer | 1 |")
	pr.Models[0].Ours.Phases = nil
	b.Reset()
	writePeer(&b, pr)
	require.NotContains(t, b.String(), header)
}
