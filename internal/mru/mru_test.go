package mru

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCacheKeepsTheMostRecentlyUsed(t *testing.T) {
	c := Cache[int, string]{Max: 2}
	builds := 0
	get := func(k int) string {
		v, err := c.Get(k, func() (string, error) { builds++; return string(rune('a' + k)), nil })
		require.NoError(t, err)
		return v
	}
	require.Equal(t, "a", get(0))
	require.Equal(t, "b", get(1))
	require.Equal(t, "a", get(0)) // cached; 0 becomes the most recent
	require.Equal(t, 2, builds)
	require.Equal(t, "c", get(2)) // evicts 1, the least recent
	require.Equal(t, 2, c.Len())
	var keys []int
	c.Each(func(k int, _ string) { keys = append(keys, k) })
	require.Equal(t, []int{2, 0}, keys)
	get(1)
	require.Equal(t, 4, builds, "1 was evicted and is built again")
}

func TestCacheDoesNotKeepFailedBuilds(t *testing.T) {
	c := Cache[int, int]{Max: 3}
	bad := errors.New("bad")
	_, err := c.Get(7, func() (int, error) { return 0, bad })
	require.ErrorIs(t, err, bad)
	require.Equal(t, 0, c.Len())
}
