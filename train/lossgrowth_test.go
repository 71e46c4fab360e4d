package train

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLossGrowth(t *testing.T) {
	ln10 := math.Log(10)
	for _, tc := range []struct {
		name         string
		loss, first  float64
		classes      int
		wantPositive bool
		want         float64
	}{
		{"steady", 2.0, 2.3, 10, false, 0},
		{"below the factor", 99 * ln10, 5, 10, false, 0},
		{"above ln K", 101 * ln10, 5, 10, true, 101},
		{"first epoch diverged", 1e22, 1e22, 10, true, 1e22 / ln10},
		{"above the first epoch's", 0.5, 0.004, 10, true, 125},
		{"first epoch lost nothing", 1, 0, 10, false, 0},
		{"infinite", math.Inf(1), 2, 10, false, 0},
		{"nan", math.NaN(), 2, 10, false, 0},
	} {
		g := lossGrowth(tc.loss, tc.first, tc.classes)
		if !tc.wantPositive {
			require.Zero(t, g, tc.name)
			continue
		}
		require.InDelta(t, tc.want, g, 1e-9*tc.want, tc.name)
	}
}

// TestLossGrowthMetric: a learning rate far too large sets LossGrowth and
// the run goes on to its last epoch; a sensible one leaves it zero.
func TestLossGrowthMetric(t *testing.T) {
	train, test := blobData(256, 50)
	for _, tc := range []struct {
		lr   float64
		grow bool
	}{{0.05, false}, {1e4, true}} {
		cfg := tinyConfig()
		cfg.LR = tc.lr
		tr, err := New(cfg, train, test, nil)
		require.NoError(t, err)
		res, err := tr.Run(context.Background())
		require.NoError(t, err)
		require.Len(t, res.Epochs, cfg.Epochs)
		last := res.Epochs[len(res.Epochs)-1]
		if !tc.grow {
			require.Zero(t, last.LossGrowth, "lr %g: loss %g", tc.lr, last.TrainLoss)
			continue
		}
		require.Greater(t, last.LossGrowth, float64(LossGrowthFactor), "lr %g: loss %g", tc.lr, last.TrainLoss)
	}
}

// TestBatchLargerThanDataIsAFieldError: only the data reveal that
// BatchSize is too large; the error still names the field, as a
// *FieldError, so that a command can name its flag.
func TestBatchLargerThanDataIsAFieldError(t *testing.T) {
	train, test := blobData(20, 10)
	_, err := New(tinyConfig(), train, test, nil)
	var fe *FieldError
	require.True(t, errors.As(err, &fe), "%v", err)
	require.Equal(t, "BatchSize", fe.Field)
	require.Equal(t, 32, fe.Value)
	require.Contains(t, fe.Reason, "20 training images")
}
