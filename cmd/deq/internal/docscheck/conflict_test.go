package docscheck

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConflictMarkers(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want []int
	}{
		{"clean", "# Title\n\nText with ======= inside and <<<<<<<< eight.\n", nil},
		{"planted", "# Title\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> main\n", []int{2, 4, 6}},
		{"bare markers", "<<<<<<<\n=======\n>>>>>>>\n", []int{1, 2, 3}},
		{"setext heading is not one", "Heading\n=========\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ConflictMarkers(tc.text))
		})
	}
}
