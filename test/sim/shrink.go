package sim

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ends maps a fault kind that starts something to the kind that ends it.
// Shrinking removes such a pair together: a crash without its restart, or
// a partition without its heal, is a different fault (one that lasts until
// the faults stop), not a smaller one. A new paired fault kind adds a row.
var ends = map[string]string{
	"crash":     "restart",
	"partition": "heal",
	"cut":       "mend",
	"delay":     "undelay",
	"skew":      "unskew",
	"remove":    "readd",
}

// units groups the events of s into what shrinking removes as one: every
// starting event with the first later event of its ending kind on the same
// node, peer and site, and every other event alone. Each unit lists the
// events' Seq numbers.
func units(s Schedule) [][]int {
	used := make([]bool, len(s.Events))
	var us [][]int
	for i, e := range s.Events {
		if used[i] {
			continue
		}
		used[i] = true
		u := []int{e.Seq}
		if end, ok := ends[e.Kind]; ok {
			for j := i + 1; j < len(s.Events); j++ {
				f := s.Events[j]
				if !used[j] && f.Kind == end && f.Node == e.Node && f.Peer == e.Peer && f.Site == e.Site {
					used[j] = true
					u = append(u, f.Seq)
					break
				}
			}
		}
		us = append(us, u)
	}
	return us
}

// without returns s less the events whose Seq is in drop. The others keep
// their Seq, so an operator command keeps its reason (op<Seq>).
func (s Schedule) without(drop []int) Schedule {
	out := s
	out.Events = nil
	for _, e := range s.Events {
		if !slices.Contains(drop, e.Seq) {
			out.Events = append(out.Events, e)
		}
	}
	return out
}

// parseDrop reads a SIM_DROP value: event numbers (Seq), comma-separated.
func parseDrop(v string) ([]int, error) {
	var drop []int
	for f := range strings.SplitSeq(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("SIM_DROP=%q: %q is not an event number (>= 1)", v, f)
		}
		drop = append(drop, n)
	}
	sort.Ints(drop)
	return slices.Compact(drop), nil
}

func formatDrop(drop []int) string {
	fs := make([]string, len(drop))
	for i, n := range drop {
		fs[i] = strconv.Itoa(n)
	}
	return strings.Join(fs, ",")
}

// errBudget ends a shrink whose budget is spent.
var errBudget = fmt.Errorf("shrink budget spent")

// ddmin shrinks us by delta debugging (Zeller's ddmin, removing
// complements only): it removes ever smaller chunks of units while fails
// says the rest still fails, until no single unit can go. fails returns
// errBudget when the budget is spent; ddmin then returns the smallest
// failing set found so far. The result is 1-minimal when the budget lasts:
// removing any one of its units makes it pass.
func ddmin(us [][]int, fails func([][]int) (bool, error)) [][]int {
	n := 2
	for len(us) > 0 {
		n = min(n, len(us))
		reduced := false
		for i := range n {
			lo, hi := i*len(us)/n, (i+1)*len(us)/n
			cand := append(slices.Clone(us[:lo]), us[hi:]...)
			f, err := fails(cand)
			if err != nil {
				return us
			}
			if f {
				us, reduced = cand, true
				n = max(n-1, 2)
				break
			}
		}
		if !reduced {
			if n >= len(us) {
				return us
			}
			n = min(2*n, len(us))
		}
	}
	return us
}

// dropped lists the Seq numbers of s that keep does not hold.
func dropped(s Schedule, keep [][]int) []int {
	var drop []int
	for _, e := range s.Events {
		if !slices.ContainsFunc(keep, func(u []int) bool { return slices.Contains(u, e.Seq) }) {
			drop = append(drop, e.Seq)
		}
	}
	return drop
}
