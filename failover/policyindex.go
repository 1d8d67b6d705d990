package failover

// policyIndex holds what a policy's lookups by name would otherwise find
// by scanning every group: each group's ForGroup, and each site's probes
// (siteProbes) and their ProbeRef by name (probe). With 50 groups of five
// probes a site, a report of every probe looked up each by a scan of the
// groups (250 comparisons each), and every evaluation of a group scanned
// for its policy and copied it; both ran on every node for every entry.
//
// It is built once, when a policy becomes the machine's (setPolicy, a
// restored snapshot), and read without a lock: the machine never changes
// a policy it holds, and copies (clone, ForGroup) leave it out, so a copy
// that its owner changes never answers from its original's index.
type policyIndex struct {
	groups map[string]*Policy
	sites  [2][]ProbeRef
	refs   [2]map[string]ProbeRef
}

// indexed sets p's index from p's fields as they are now.
func (p *Policy) indexed() *Policy {
	x := &policyIndex{groups: make(map[string]*Policy, len(p.Groups))}
	for _, g := range p.Groups {
		if q, ok := p.ForGroup(g.Name); ok {
			x.groups[g.Name] = q
		}
	}
	for i, site := range sites {
		x.sites[i] = p.siteProbes(site)
		x.refs[i] = make(map[string]ProbeRef, len(x.sites[i]))
		for _, r := range x.sites[i] {
			x.refs[i][r.Name] = r
		}
	}
	p.index = x
	return p
}

// Indexed returns a copy of p whose lookups by group and probe name are
// answered from an index, as the machine's own policy's are: for a
// runtime that reads the replicated policy for every report (its lean
// encoding looks up every probe of every group). Its owner must not
// change it.
func (p *Policy) Indexed() *Policy {
	q := p.clone()
	return q.indexed()
}
