package enum

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

type color int

var errUnknown = errors.New("test: unknown")

var colors = Table[color]{Type: "color", Names: []string{"red", "green"}, Unknown: errUnknown, What: "color", Invalid: "test: %s is not a color"}

func TestTable(t *testing.T) {
	require.Equal(t, []color{0, 1}, colors.Values())
	require.Equal(t, "green", colors.Name(1))
	require.Equal(t, "color(2)", colors.Name(2))
	require.Equal(t, "color(-1)", colors.Name(-1))
	v, err := colors.Parse("green")
	require.NoError(t, err)
	require.Equal(t, color(1), v)
	_, err = colors.Parse("blue")
	require.ErrorIs(t, err, errUnknown)
	require.EqualError(t, err, `test: unknown color "blue" (want red, green)`)
	noWhat := colors
	noWhat.What, noWhat.Want = "", "red (or green)"
	_, err = noWhat.Parse("blue")
	require.EqualError(t, err, `test: unknown "blue" (want red (or green))`)
	or := colors
	or.Or = true
	_, err = or.Parse("blue")
	require.EqualError(t, err, `test: unknown color "blue" (want red or green)`)
	b, err := colors.MarshalText(0)
	require.NoError(t, err)
	require.Equal(t, "red", string(b))
	_, err = colors.MarshalText(5)
	require.EqualError(t, err, "test: color(5) is not a color")
	require.NoError(t, colors.Check(1))
	// Type and Invalid default to E's name and package.
	plain := Table[color]{Names: colors.Names}
	require.Equal(t, "color(2)", plain.Name(2))
	require.EqualError(t, plain.Check(2), "enum: cannot marshal color(2)")
	dst := color(1)
	require.Error(t, colors.UnmarshalText(&dst, []byte("blue")))
	require.Equal(t, color(1), dst, "an error leaves dst alone")
	require.NoError(t, colors.UnmarshalText(&dst, []byte("red")))
	require.Equal(t, color(0), dst)
}
