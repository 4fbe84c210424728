package site

import (
	"slices"
)

// tieGroups turns the "tied with" relation of one node's ranked models
// (study.json's tied_with: the 95 % paired interval holds 0) into a
// compact letter display: every maximal set of models that are all tied
// with each other gets a letter, lettered in rank order of its best
// member, so two models share a letter exactly when neither is shown to
// be better than the other. A model tied with no one gets a letter of its
// own. order lists the models best first; tied reports whether two are
// tied. It returns each model's letters, in order's positions.
func tieGroups(order []string, tied func(a, b string) bool) [][]string {
	n := len(order)
	adj := make([][]bool, n)
	for i := range adj {
		adj[i] = make([]bool, n)
		for j := range n {
			adj[i][j] = i != j && (tied(order[i], order[j]) || tied(order[j], order[i]))
		}
	}
	var cliques [][]int
	// Bron–Kerbosch with pivoting: a node has at most a few dozen ranked
	// models.
	var bk func(r, p, x []int)
	bk = func(r, p, x []int) {
		if len(p) == 0 && len(x) == 0 {
			c := slices.Clone(r)
			slices.Sort(c)
			cliques = append(cliques, c)
			return
		}
		pivot := -1
		best := -1
		for _, u := range append(slices.Clone(p), x...) {
			k := 0
			for _, v := range p {
				if adj[u][v] {
					k++
				}
			}
			if k > best {
				best, pivot = k, u
			}
		}
		for _, v := range slices.Clone(p) {
			if pivot >= 0 && adj[pivot][v] {
				continue
			}
			var np, nx []int
			for _, w := range p {
				if adj[v][w] {
					np = append(np, w)
				}
			}
			for _, w := range x {
				if adj[v][w] {
					nx = append(nx, w)
				}
			}
			bk(append(slices.Clone(r), v), np, nx)
			p = slices.DeleteFunc(p, func(w int) bool { return w == v })
			x = append(x, v)
		}
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	bk(nil, all, nil)
	// Letter the groups by their best member, then by their next ones.
	slices.SortFunc(cliques, func(a, b []int) int { return slices.Compare(a, b) })
	out := make([][]string, n)
	for k, c := range cliques {
		l := letter(k)
		for _, i := range c {
			out[i] = append(out[i], l)
		}
	}
	return out
}

// letter is the k-th group's name: a … z, then aa, ab, ….
func letter(k int) string {
	if k < 26 {
		return string(rune('a' + k))
	}
	return letter(k/26-1) + letter(k%26)
}
