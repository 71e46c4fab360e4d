package train

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// soakEnv enables TestSoakKillResume; soakRoundsEnv sets its number of
// rounds per configuration (default 100).
const (
	soakEnv       = "DEQ_SOAK"
	soakRoundsEnv = "DEQ_SOAK_ROUNDS"
)

// TestSoakKillResume kills training runs at random batches and resumes
// them from their last checkpoint until they finish, and requires the
// final state (every parameter, Adam moment and projection state, bit for
// bit) and the final checkpoint bytes of an uninterrupted run. A kill is
// the run's context cancelled from inside OnBatch, or from OnEpoch after
// the epoch's checkpoint, after a number of batches drawn from a PCG
// seeded by the round and the configuration: the same kill points every
// time. One configuration is planned for half its epochs and extended
// when it finishes, with the constant schedule that makes the extension
// equal to the planned run. Opt-in (a few minutes): DEQ_SOAK=1, or make
// soak; DEQ_SOAK_ROUNDS sets the rounds per configuration.
func TestSoakKillResume(t *testing.T) {
	if os.Getenv(soakEnv) == "" {
		t.Skipf("opt-in soak test: set %s=1 (make soak)", soakEnv)
	}
	rounds := 100
	if v := os.Getenv(soakRoundsEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, soakRoundsEnv)
		rounds = n
	}
	tr, te := blobData(384, 100)
	base := tinyConfig() // 12 batches of 32 per epoch
	base.Epochs = 6
	step := base
	step.Schedule, step.WeightDecay, step.ClipNorm = Step, 1e-3, 0.5
	meanfield := base
	meanfield.Model = ModelConfig{Cell: MeanFieldCell, Hidden: 6, Encoder: 5, Units: 12}
	experts := base
	experts.Model = ModelConfig{Cell: ExpertsCell, Hidden: 6, Encoder: 5, Terms: 3}
	experts.Forward, experts.Eval = SolverConfig{Method: methodNamed("vrghal"), Tol: 0.05, MaxIter: 8, SampleScale: 0.01}, SolverConfig{Method: methodNamed("anderson")}
	extended := base
	extended.Schedule = Constant
	for ci, tc := range []struct {
		name   string
		cfg    Config
		extend bool // plan half the epochs, then extend to cfg.Epochs
	}{
		{"dense cosine", base, false},
		{"dense step decay clip", step, false},
		{"meanfield", meanfield, false},
		{"experts vrghal", experts, false},
		{"dense constant extended", extended, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refPath := tempPath(t, "ref.ckpt")
			ref, err := New(tc.cfg, tr, te, &Options{Checkpoint: refPath})
			require.NoError(t, err)
			_, err = ref.Run(context.Background())
			require.NoError(t, err)
			want := stateBits(ref)
			wantBytes, err := os.ReadFile(refPath)
			require.NoError(t, err)
			nb := ref.BatchesPerEpoch()
			for r := range rounds {
				rng := rand.New(rand.NewPCG(uint64(r), uint64(ci)))
				path := tempPath(t, "run.ckpt")
				cfg := tc.cfg
				if tc.extend {
					cfg.Epochs /= 2
				}
				var trn *Trainer
				kills := 0
				for {
					ctx, cancel := context.WithCancel(context.Background())
					opts := &Options{Checkpoint: path}
					if gap := 1 + rng.IntN(nb); rng.IntN(4) == 0 {
						epochs := 0 // kill after the epoch's checkpoint
						opts.OnEpoch = func(*EpochMetrics) {
							if epochs++; epochs == 1+gap/nb {
								cancel()
							}
						}
					} else {
						seen := 0
						opts.OnBatch = func(*BatchMetrics) {
							if seen++; seen == gap {
								cancel()
							}
						}
					}
					if trn == nil {
						trn, err = New(cfg, tr, te, opts)
					} else {
						ck, lerr := Load(path)
						require.NoError(t, lerr)
						if ck.Epoch == ck.Config.Epochs && ck.Config.Epochs < tc.cfg.Epochs {
							ck.Config.Epochs = tc.cfg.Epochs // extend the finished run
						}
						trn, err = ck.Resume(tr, te, opts)
					}
					require.NoError(t, err)
					_, err = trn.Run(ctx)
					cancel()
					if err == nil && trn.cfg.Epochs == tc.cfg.Epochs {
						break
					}
					if err != nil {
						require.ErrorIs(t, err, context.Canceled)
						kills++
					}
				}
				requireSameBits(t, want, stateBits(trn))
				got, err := os.ReadFile(path)
				require.NoError(t, err)
				require.True(t, equalBytes(wantBytes, got), "round %d: the final checkpoint differs from the uninterrupted run's", r)
				t.Logf("round %d: %d kills", r, kills)
			}
		})
	}
}
