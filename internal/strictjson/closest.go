package strictjson

import "slices"

// Closest returns the name of names nearest to word, for a "did you
// mean" after an unknown member or identity, and false when none is
// close: one edit (an insertion, deletion, substitution or swap of
// neighbours), or two in a word of 12 characters or more, and fewer
// edits than half of word's characters, so that a short word is not
// "close" to everything. Of names equally near, the least in byte order
// wins.
func Closest(word string, names []string) (string, bool) {
	w := []rune(word)
	best, bestDist := "", -1
	for _, n := range slices.Sorted(slices.Values(names)) {
		if n == word {
			continue
		}
		d := editDistance(w, []rune(n))
		if d <= min(2, max(1, len(w)/6)) && 2*d < len(w) && (bestDist < 0 || d < bestDist) {
			best, bestDist = n, d
		}
	}
	return best, bestDist >= 0
}

// editDistance is the optimal string alignment distance of a and b
// (Levenshtein's edits plus the swap of two neighbouring characters).
func editDistance(a, b []rune) int {
	// Three rows: the one before the previous is for swaps.
	prev2 := make([]int, len(b)+1)
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
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
