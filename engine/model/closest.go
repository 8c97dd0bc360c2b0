package model

import (
	"sort"
	"strings"
)

// Closest returns up to n candidates nearest to s: by edit distance,
// case-insensitive, with a candidate that contains s (or is contained in it)
// counted as near. Ties keep the candidates' order.
func Closest(s string, cands []string, n int) []string {
	type scored struct {
		c string
		d int
	}
	best := make([]scored, 0, len(cands))
	ls := strings.ToLower(s)
	for _, c := range cands {
		lc := strings.ToLower(c)
		d := EditDistance(ls, lc)
		if strings.Contains(lc, ls) || strings.Contains(ls, lc) {
			d = min(d, 1+abs(len(lc)-len(ls))/4)
		}
		best = append(best, scored{c, d})
	}
	sort.SliceStable(best, func(i, j int) bool { return best[i].d < best[j].d })
	if len(best) > n {
		best = best[:n]
	}
	out := make([]string, len(best))
	for i, b := range best {
		out[i] = b.c
	}
	return out
}

// EditDistance is the Levenshtein distance between two strings, by byte.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
