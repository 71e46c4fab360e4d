package docscheck

import "strings"

// ConflictMarkers returns the 1-based numbers of the lines of text that are
// merge-conflict markers: lines that begin with seven '<' or '>' followed
// by a space or the line's end, or that are seven '=' alone.
func ConflictMarkers(text string) []int {
	var lines []int
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimRight(l, "\r")
		switch {
		case l == "=======":
		case strings.HasPrefix(l, "<<<<<<<") || strings.HasPrefix(l, ">>>>>>>"):
			if rest := l[7:]; rest != "" && rest[0] != ' ' {
				continue
			}
		default:
			continue
		}
		lines = append(lines, i+1)
	}
	return lines
}
