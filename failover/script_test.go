package failover

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The scripts in testdata/*.txt drive one fresh Machine per file. Each case
// is a block of command lines, a "----" line and the expected output, ended
// by a blank line. `go test ./failover -run TestScripts -rewrite` rewrites the
// expectations; read the diff before committing it.
//
// failover and failback build the command as a current leader logs it
// (AckBlock set); the argument legacy builds it as leaders logged it before
// manual moves acknowledged a standing block.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt")

// base is t=0 of every script: times in scripts are offsets from it.
var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("got scripts %v (err %v), want some in testdata", files, err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScript(t, f) })
	}
}

type scriptCase struct {
	lines []string // command lines, comments included
	want  string
	line  int // line number of the first command
}

func parseScript(t *testing.T, path string) []scriptCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var cases []scriptCase
	var cur *scriptCase
	inWant := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case inWant && line == "":
			inWant = false
			cases = append(cases, *cur)
			cur = nil
		case inWant:
			cur.want += line + "\n"
		case line == "----":
			if cur == nil {
				t.Fatalf("%s:%d: ---- without commands", path, n)
			}
			inWant = true
		case strings.TrimSpace(line) == "":
		default:
			if cur == nil {
				cur = &scriptCase{line: n}
			}
			cur.lines = append(cur.lines, line)
		}
	}
	if cur != nil {
		if !inWant {
			t.Fatalf("%s:%d: commands without ---- at end of file", path, cur.line)
		}
		cases = append(cases, *cur)
	}
	return cases
}

func runScript(t *testing.T, path string) {
	cases := parseScript(t, path)
	h := &harness{t: t, m: New(), now: base}
	var out strings.Builder
	for _, c := range cases {
		var got []string
		for _, l := range c.lines {
			if strings.HasPrefix(strings.TrimSpace(l), "#") {
				continue
			}
			if s := h.run(l); s != "" {
				got = append(got, strings.TrimRight(s, "\n"))
			}
		}
		g := strings.Join(got, "\n")
		if g == "" {
			g = "ok"
		}
		// Blank lines would end the block; keep the output one block.
		g = strings.ReplaceAll(g, "\n\n", "\n.\n") + "\n"
		if *rewrite {
			out.WriteString(strings.Join(c.lines, "\n") + "\n----\n" + g + "\n")
			continue
		}
		if g != c.want {
			t.Errorf("%s:%d: got:\n%s\nwant:\n%s", path, c.line, g, c.want)
		}
	}
	h.checkReplay()
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimSuffix(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatalf("rewrite %s: %v", path, err)
		}
	}
}

type harness struct {
	t     *testing.T
	m     *Machine
	index uint64
	now   int64
	log   [][]byte // every command applied, in order
}

type args struct {
	keys []string
	kv   map[string]string
}

func parseArgs(t *testing.T, s string) args {
	a := args{kv: map[string]string{}}
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		i := strings.IndexAny(s, "= ")
		if i < 0 || s[i] == ' ' {
			k := s
			if i >= 0 {
				k = s[:i]
			}
			a.keys, a.kv[k] = append(a.keys, k), "true"
			s = s[len(k):]
			continue
		}
		k := s[:i]
		s = s[i+1:]
		var v string
		if strings.HasPrefix(s, `"`) {
			j := strings.Index(s[1:], `"`)
			if j < 0 {
				t.Fatalf("unterminated quote in %q", s)
			}
			v, s = s[1:j+1], s[j+2:]
		} else {
			j := strings.IndexByte(s, ' ')
			if j < 0 {
				j = len(s)
			}
			v, s = s[:j], s[j:]
		}
		a.keys, a.kv[k] = append(a.keys, k), v
	}
	return a
}

func (a args) str(k, def string) string {
	if v, ok := a.kv[k]; ok {
		return v
	}
	return def
}

func (a args) int(t *testing.T, k string, def int) int {
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", k, v, err)
	}
	return n
}

func (a args) bool(k string) bool { return a.kv[k] == "true" }

func (a args) dur(t *testing.T, k string, def time.Duration) time.Duration {
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", k, v, err)
	}
	return d
}

// at reads an offset from base; missing means "the harness's current time".
func (h *harness) at(a args, k string) int64 {
	if _, ok := a.kv[k]; !ok {
		return h.now
	}
	return base + int64(a.dur(h.t, k, 0))
}

func rel(ns int64) string {
	if ns == 0 {
		return "never"
	}
	return time.Duration(ns - base).String()
}

func (h *harness) run(line string) string {
	t := h.t
	verb, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	if verb == "raw" {
		return h.apply("raw", []byte(rest))
	}
	a := parseArgs(t, rest)
	switch verb {
	case "policy":
		p := scriptPolicy(t, a)
		return h.cmd("policy", Command{At: h.at(a, "at"), Payload: SetPolicy{Policy: p, Actor: a.str("actor", "ops")}})
	case "observe":
		o := h.observe(a, a.str("node", ""), a.str("primary", ""), a.str("backup", ""))
		return h.cmd("observe "+o.Node, Command{At: h.now, Payload: o})
	case "round", "rounds":
		n := a.int(t, "n", 1)
		from := h.at(a, "at")
		if _, ok := a.kv["from"]; ok {
			from = h.at(a, "from")
		}
		every := a.dur(t, "every", time.Second)
		var out []string
		for i := range n {
			h.now = from + int64(i)*int64(every)
			for _, k := range a.keys {
				if slices.Contains([]string{"n", "at", "from", "every", "lag"}, k) {
					continue
				}
				pri, bak, _ := strings.Cut(a.kv[k], "/")
				oa := args{kv: map[string]string{}}
				if lag, ok := a.kv["lag"]; ok {
					oa.kv["lag"] = lag
				}
				o := h.observe(oa, k, pri, bak) // at h.now
				if s := h.cmd("observe "+k, Command{At: h.now, Payload: o}); s != "" {
					out = append(out, s)
				}
			}
		}
		return strings.Join(out, "\n")
	case "tick":
		return h.cmd("tick", Command{At: h.at(a, "at"), Payload: Tick{}})
	case "failover":
		return h.cmd("failover", Command{At: h.at(a, "at"), Payload: Failover{To: Site(a.str("to", "backup")), Actor: a.str("actor", "alice"),
			Reason: a.str("reason", ""), Force: a.bool("force"), Planned: a.bool("planned"), AckBlock: !a.bool("legacy"), Group: a.str("group", ""),
			AllGroups: a.bool("all-groups")}})
	case "failback":
		return h.cmd("failback", Command{At: h.at(a, "at"), Payload: Failback{Actor: a.str("actor", "alice"), Reason: a.str("reason", ""), Force: a.bool("force"),
			AckBlock: !a.bool("legacy"), Group: a.str("group", "")}})
	case "pause":
		var until int64
		if _, ok := a.kv["until"]; ok {
			until = h.at(a, "until")
		}
		return h.cmd("pause", Command{At: h.at(a, "at"), Payload: Pause{Actor: a.str("actor", "alice"), Reason: a.str("reason", ""), Until: until, Group: a.str("group", "")}})
	case "resume":
		return h.cmd("resume", Command{At: h.at(a, "at"), Payload: Resume{Actor: a.str("actor", "alice"), Reason: a.str("reason", ""), Group: a.str("group", "")}})
	case "ack":
		return h.cmd("ack", Command{At: h.at(a, "at"), Payload: Ack{Actor: a.str("actor", "alice"), Reason: a.str("reason", ""), Group: a.str("group", "")}})
	case "action":
		var w, v int64
		if _, ok := a.kv["written"]; ok {
			w = h.at(a, "written")
		}
		if _, ok := a.kv["verified"]; ok {
			v = h.at(a, "verified")
		}
		servers := parseServers(t, a.str("servers", ""))
		return h.cmd("action", Command{At: h.at(a, "at"), Payload: ActionResult{Gen: uint64(a.int(t, "gen", 0)), Outcome: a.str("outcome", ""),
			Detail: a.str("detail", ""), Actor: a.str("actor", "a"), WrittenAt: w, VerifiedAt: v, Servers: servers, Group: a.str("group", "")}})
	case "breakglass":
		var w int64
		if _, ok := a.kv["written"]; ok {
			w = h.at(a, "written")
		}
		return h.cmd("breakglass", Command{At: h.at(a, "at"), Payload: BreakGlass{Site: Site(a.str("site", "backup")), Actor: a.str("actor", "alice"),
			Reason: a.str("reason", ""), WrittenAt: w}})
	case "drill":
		v := h.m.View()
		var c DrillCanary
		if v.Policy != nil {
			c = CanaryFor(*v.Policy, a.str("canary", "_drwatch-drill.lms"))
		}
		if a.bool("no-values") {
			c.Backup = nil
		}
		var req int64
		if _, ok := a.kv["requested"]; ok {
			req = h.at(a, "requested")
		}
		return h.cmd("drill", Command{At: h.at(a, "at"), Payload: DrillStart{Reason: a.str("reason", "rehearsal"), Actor: a.str("actor", "alice"),
			Canary: c, Scheduled: a.bool("scheduled"), RequestedAt: req}})
	case "drill-step":
		servers := parseServers(t, a.str("servers", ""))
		return h.cmd("drill-step", Command{At: h.at(a, "at"), Payload: DrillStep{ID: h.drillID(a), Step: a.str("step", ""),
			StepAt: h.at(a, "step-at"), Detail: a.str("detail", ""), Servers: servers}})
	case "drill-end":
		var checks []DrillCheck
		if rs := a.str("readiness", ""); rs != "" {
			for _, x := range strings.Split(rs, ",") {
				name, st, _ := strings.Cut(x, ":")
				checks = append(checks, DrillCheck{Name: name, Pass: st == "pass", Reason: st})
			}
		}
		return h.cmd("drill-end", Command{At: h.at(a, "at"), Payload: DrillEnd{ID: h.drillID(a), Outcome: a.str("outcome", ""),
			Rule: a.str("rule", ""), Detail: a.str("detail", ""), Actor: a.str("actor", "a"), Readiness: checks}})
	case "drills":
		ended, running := h.m.Drills()
		if n := a.int(t, "tail", 0); n > 0 && n < len(ended) {
			ended = ended[len(ended)-n:]
		}
		var out []string
		for _, d := range ended {
			out = append(out, renderDrill(d))
		}
		if running != nil {
			out = append(out, renderDrill(*running))
		}
		if len(out) == 0 {
			return "drills: none"
		}
		return strings.Join(out, "\n")
	case "verdicts":
		return renderVerdicts(h.m.View())
	case "suspect":
		v := h.m.View()
		if got := h.m.Suspicion("").Suspect; !slices.Equal(got, v.Suspect) {
			t.Fatalf("Suspicion().Suspect %v differs from View().Suspect %v", got, v.Suspect)
		}
		if len(v.Suspect) == 0 {
			return "suspect: none"
		}
		var ss []string
		for _, site := range v.Suspect {
			ss = append(ss, string(site))
		}
		return "suspect: " + list(ss)
	case "desired":
		if g, ok := a.kv["group"]; ok {
			d, ok := h.m.GroupDesired(g)
			if !ok {
				return "desired: no group " + g
			}
			return renderDesired(d)
		}
		return renderDesired(h.m.Desired())
	case "overview":
		return renderOverview(h.m.Overview())
	case "history":
		hist := h.m.History()
		if g, ok := a.kv["group"]; ok {
			hist = slices.DeleteFunc(hist, func(e Entry) bool { return e.Group != g })
		}
		if n := a.int(t, "tail", 0); n > 0 && n < len(hist) {
			hist = hist[len(hist)-n:]
		}
		var out []string
		for _, e := range hist {
			out = append(out, renderEntry(e))
		}
		if len(out) == 0 {
			return "history: empty"
		}
		return strings.Join(out, "\n")
	case "status":
		if g, ok := a.kv["group"]; ok {
			v, ok := h.m.GroupView(g)
			if !ok {
				return "status: no group " + g
			}
			return renderStatus(v)
		}
		return renderStatus(h.m.View())
	case "probes":
		return renderProbes(h.m.View(), a.str("node", ""))
	case "explain":
		s, err := h.m.ExplainGroup(a.str("group", ""), uint64(a.int(t, "gen", 0)))
		if err != nil {
			return "error: " + err.Error()
		}
		return s
	case "whatif":
		return h.whatIf(a)
	case "snapshot-check":
		h.checkReplay()
		return ""
	}
	t.Fatalf("unknown script command %q", verb)
	return ""
}

func scriptPolicy(t *testing.T, a args) Policy {
	var probes []ProbeRef
	for _, n := range strings.Split(a.str("probes", "web"), ",") {
		probes = append(probes, ProbeRef{Name: n, Critical: true})
	}
	if nc := a.str("noncritical", ""); nc != "" {
		for _, n := range strings.Split(nc, ",") {
			probes = append(probes, ProbeRef{Name: n})
		}
	}
	p := Policy{
		Nodes:        strings.Split(a.str("nodes", "a,b,c"), ","),
		Quorum:       a.int(t, "quorum", 2),
		Fall:         a.int(t, "fall", 3),
		Rise:         a.int(t, "rise", 2),
		Interval:     a.dur(t, "interval", time.Second),
		StaleAfter:   a.dur(t, "stale", 0),
		AutoFailover: a.str("auto", "true") == "true",
		BlockWindow:  a.dur(t, "block", time.Hour),
		Failback:     FailbackPolicy{Mode: a.str("failback", "manual"), After: a.dur(t, "failback-after", 0)},
		Sites:        map[Site]SitePolicy{Primary: {Probes: probes}, Backup: {Probes: slices.Clone(probes)}},
		Zone:         a.str("zone", "example.org."),
		Records: []Record{
			{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.11", "203.0.113.10"}, Backup: []string{"198.51.100.10"}},
			{Name: "lms", Type: "AAAA", TTL: 60, Primary: []string{"2001:db8::10"}, Backup: []string{"2001:db8:1::10"}},
		},
	}
	// groups=NAME:probe+probe,... adds a failover group per item, each with
	// those critical probes on both sites and one A record NAME, whose
	// addresses end in the group's position (1, 2, ...); default=none
	// leaves the default group out.
	if gs := a.str("groups", ""); gs != "" {
		for i, item := range strings.Split(gs, ",") {
			name, ps, _ := strings.Cut(item, ":")
			var refs []ProbeRef
			for _, n := range strings.Split(ps, "+") {
				refs = append(refs, ProbeRef{Name: n, Critical: true})
			}
			p.Groups = append(p.Groups, Group{
				Name: name, AutoFailover: p.AutoFailover, BlockWindow: p.BlockWindow, Failback: p.Failback,
				Sites: map[Site]SitePolicy{Primary: {Probes: refs}, Backup: {Probes: slices.Clone(refs)}},
				Zone:  p.Zone,
				Records: []Record{{Name: name, Type: "A", TTL: 60,
					Primary: []string{fmt.Sprintf("203.0.113.%d", 100+i)}, Backup: []string{fmt.Sprintf("198.51.100.%d", 100+i)}}},
			})
		}
	}
	if a.str("default", "") == "none" {
		p.Sites, p.Records = nil, nil
	}
	return p
}

// allProbes lists the probe names of site in every group of p, sorted.
func allProbes(p *Policy, site Site) []string {
	var out []string
	for _, name := range p.GroupNames() {
		q, _ := p.ForGroup(name)
		for _, r := range q.Sites[site].Probes {
			if !slices.Contains(out, r.Name) {
				out = append(out, r.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

func renderOverview(gs []GroupSummary) string {
	if len(gs) == 0 {
		return "overview: no groups"
	}
	var out []string
	for _, g := range gs {
		line := fmt.Sprintf("%s active=%s mode=%s blocked=%t pending=%t primary=%s backup=%s gen=%d",
			g.Name, g.Active, g.Mode, g.Blocked, g.Pending, g.Sites[Primary].Verdict, g.Sites[Backup].Verdict, g.Desired.Gen)
		if g.WithheldRule != "" {
			line += " withheld=" + g.WithheldRule
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// observe builds one round from node: each of pri and bak is "up" or
// "down" for every probe of the site, or "probe:up,probe:down,...", or
// empty for no results on that site.
func (h *harness) observe(a args, node, pri, bak string) Observe {
	t := h.t
	o := Observe{Node: node, Seq: uint64(a.int(t, "seq", 0))}
	h.now = h.at(a, "at")
	v := h.m.View()
	switch hs := a.str("hash", "current"); hs {
	case "current":
		o.PolicyHash = v.PolicyHash
	case "none":
	default:
		o.PolicyHash = hs
	}
	for _, sv := range []struct {
		site Site
		spec string
	}{{Primary, pri}, {Backup, bak}} {
		if sv.spec == "" || sv.spec == "-" {
			continue
		}
		states := map[string]string{}
		if sv.spec == "up" || sv.spec == "down" {
			if v.Policy != nil {
				full := *v.Policy
				if pol, _ := h.m.Policy(); pol != nil {
					full = *pol
				}
				for _, name := range allProbes(&full, sv.site) {
					states[name] = sv.spec
				}
			}
		} else {
			for _, kv := range strings.Split(sv.spec, ",") {
				k, st, ok := strings.Cut(kv, ":")
				if !ok {
					t.Fatalf("bad probe spec %q", kv)
				}
				states[k] = st
			}
		}
		for _, name := range sortedKeys(states) {
			o.Results = append(o.Results, result(sv.site, name, states[name] == "up"))
		}
	}
	if x := a.str("extra", ""); x != "" {
		sp, st, _ := strings.Cut(x, ":")
		site, name, _ := strings.Cut(sp, "/")
		o.Results = append(o.Results, result(Site(site), name, st == "up"))
	}
	if _, ok := a.kv["lag"]; ok {
		// The watcher completed its probes lag before the leader stamped the round.
		for i := range o.Results {
			o.Results[i].CompletedAt = h.now - int64(a.dur(t, "lag", 0))
		}
	}
	return o
}

func result(site Site, probe string, ok bool) ProbeResult {
	if ok {
		return ProbeResult{Site: site, Probe: probe, OK: true, LatencyMS: 12}
	}
	return ProbeResult{Site: site, Probe: probe, Class: "connect", Phase: "tcp connect", Reason: "connection refused", LatencyMS: 3}
}

func (h *harness) cmd(label string, c Command) string {
	b, err := Encode(c)
	if err != nil {
		// Encoding is what every caller does first; a script may test its refusal.
		return label + ": encode error: " + err.Error()
	}
	return h.apply(label, b)
}

func (h *harness) apply(label string, b []byte) string {
	h.index++
	h.log = append(h.log, b)
	resp := h.m.Apply(h.index, b)
	r, err := DecodeResponse(resp)
	prefix := fmt.Sprintf("[%d] %s", h.index, label)
	if err != nil {
		var re *RefusedError
		code := "error"
		switch {
		case errors.As(err, &re):
			code = "refused[" + re.Rule + "]"
		case errors.Is(err, ErrBadCommand):
			code = "bad-command"
		case errors.Is(err, ErrUnknownNode):
			code = "unknown-node"
		case errors.Is(err, ErrNoPolicy):
			code = "no-policy"
		case errors.Is(err, ErrUnknownGen):
			code = "unknown-gen"
		}
		return prefix + ": " + code + ": " + err.Error()
	}
	var parts []string
	if r.Gen != 0 {
		parts = append(parts, fmt.Sprintf("gen=%d %s %s->%s", r.Gen, r.Kind, r.From, r.To))
		if r.Kind == KindPolicy {
			parts[len(parts)-1] = fmt.Sprintf("gen=%d policy: new records for %s", r.Gen, r.Active)
		}
	}
	if r.Withheld != "" {
		parts = append(parts, "withheld "+r.Withheld)
	}
	if r.Noop != "" {
		parts = append(parts, "noop "+r.Noop+": "+r.Message)
	}
	if r.Kind == KindPause || r.Kind == KindResume || r.Kind == KindAck {
		parts = append(parts, r.Message)
	}
	if r.Kind == KindAction {
		parts = append(parts, "recorded")
	}
	if r.Kind == KindDrill && r.Noop == "" {
		parts = append(parts, r.Message)
	}
	if r.Group != "" && len(parts) > 0 {
		parts[0] = "group=" + r.Group + " " + parts[0]
	}
	for _, g := range r.Groups {
		gp := "group=" + g.Group
		switch {
		case g.Refused != "":
			gp += " refused " + g.Refused
		case g.Gen != 0 && g.Kind == KindPolicy:
			gp += fmt.Sprintf(" gen=%d policy: new records for %s", g.Gen, g.Active)
		case g.Gen != 0:
			gp += fmt.Sprintf(" gen=%d %s %s->%s", g.Gen, g.Kind, g.From, g.To)
		case g.Noop != "":
			gp += " noop " + g.Noop
		}
		if g.Withheld != "" {
			gp += " withheld " + g.Withheld
		}
		parts = append(parts, gp)
	}
	if len(parts) == 0 {
		return ""
	}
	return prefix + ": " + strings.Join(parts, "; ")
}

// checkReplay proves the script's state is reproducible: the snapshot
// survives Restore byte for byte, and replaying the same log into a fresh
// machine gives the same snapshot.
func (h *harness) checkReplay() {
	t := h.t
	t.Helper()
	snap, err := h.m.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	r := New()
	if err := r.Restore(snap); err != nil {
		t.Fatalf("restore: %v", err)
	}
	again, _ := r.Snapshot()
	if !bytes.Equal(snap, again) {
		t.Fatalf("snapshot after restore differs:\n%s\n%s", snap, again)
	}
	fresh := New()
	for i, b := range h.log {
		fresh.Apply(uint64(i+1), b)
	}
	replayed, _ := fresh.Snapshot()
	if !bytes.Equal(snap, replayed) {
		t.Fatalf("replayed snapshot differs:\n%s\n%s", snap, replayed)
	}
}

func list(xs []string) string { return "[" + strings.Join(xs, " ") + "]" }

// parseServers reads servers=ns1:53@4200ms,ns2:53@4300ms: per-server
// verification times as offsets from base.
func parseServers(t *testing.T, sv string) []ServerVerification {
	var servers []ServerVerification
	if sv == "" {
		return nil
	}
	for _, x := range strings.Split(sv, ",") {
		name, at, _ := strings.Cut(x, "@")
		d, err := time.ParseDuration(at)
		if err != nil {
			t.Fatalf("servers=%q: %v", sv, err)
		}
		servers = append(servers, ServerVerification{Server: name, VerifiedAt: base + int64(d)})
	}
	return servers
}

// drillID is the id argument, by default the running drill's (else the
// last one's).
func (h *harness) drillID(a args) uint64 {
	if _, ok := a.kv["id"]; ok {
		return uint64(a.int(h.t, "id", 0))
	}
	ended, running := h.m.Drills()
	switch {
	case running != nil:
		return running.ID
	case len(ended) > 0:
		return ended[len(ended)-1].ID
	}
	return 0
}

func renderDrill(d DrillRecord) string {
	s := fmt.Sprintf("drill %d %s by %s started=%s", d.ID, d.Outcome, d.Actor, rel(d.StartedAt))
	if d.Scheduled {
		s += " scheduled"
	}
	if d.EndedAt != 0 {
		s += " ended=" + rel(d.EndedAt)
	}
	if d.Rule != "" {
		s += " rule=" + d.Rule
	}
	if d.AbortedBy != 0 {
		s += fmt.Sprintf(" aborted-by=%d", d.AbortedBy)
	}
	s += fmt.Sprintf(" canary=%s %d %s %s/%s", d.Canary.Name, d.Canary.TTL, d.Canary.Type,
		strings.Join(d.Canary.Primary, ","), strings.Join(d.Canary.Backup, ","))
	for _, c := range d.Checks {
		s += fmt.Sprintf("\n  check %s ok=%v: %s", c.Rule, c.OK, c.Detail)
	}
	for _, st := range d.Steps {
		s += fmt.Sprintf("\n  step %s at=%s", st.Step, rel(st.At))
		for _, sv := range st.Servers {
			s += fmt.Sprintf(" %s=%s", sv.Server, rel(sv.VerifiedAt))
		}
	}
	for _, r := range d.Readiness {
		s += fmt.Sprintf("\n  readiness %s pass=%v: %s", r.Name, r.Pass, r.Reason)
	}
	if tm, ok := d.Times(); ok {
		s += fmt.Sprintf("\n  times commit=%s write=%s propagation=%s ttl=%s", tm.Commit, tm.Write, tm.Propagation, tm.TTL)
	}
	if d.Detail != "" {
		s += "\n  detail: " + d.Detail
	}
	return s
}

func renderVerdicts(v View) string {
	var b strings.Builder
	for _, s := range sites {
		t := v.Sites[s]
		fmt.Fprintf(&b, "%s: %s up=%s down=%s unknown=%s abstain=%s quorum=%d\n", s, t.Verdict, list(t.Up), list(t.Down), list(t.Unknown), list(t.Abstain), t.Quorum)
	}
	for _, n := range v.Nodes {
		fmt.Fprintf(&b, "node %s: primary=%s backup=%s last=%s", n.Node, n.Verdicts[Primary], n.Verdicts[Backup], rel(n.LastAt))
		if n.Abstain != "" {
			fmt.Fprintf(&b, " abstain=%q", n.Abstain)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func renderDesired(d Desired) string {
	var b strings.Builder
	fmt.Fprintf(&b, "desired gen=%d active=%s done=%v fence=%s\n", d.Gen, d.Active, d.Done, d.Fence)
	for _, r := range d.Records {
		fmt.Fprintf(&b, "  %s %d %s %s\n", r.Name, r.TTL, r.Type, strings.Join(r.Values, " "))
	}
	return b.String()
}

func renderEntry(e Entry) string {
	s := fmt.Sprintf("#%d t=%s %s", e.Index, rel(e.At), e.Kind)
	if e.Group != "" {
		s += " group=" + e.Group
	}
	if e.Gen != 0 {
		s += fmt.Sprintf(" gen=%d", e.Gen)
	}
	if e.From != "" || e.To != "" {
		s += fmt.Sprintf(" %s->%s", e.From, e.To)
	}
	if e.Actor != "" {
		s += " by " + e.Actor
	}
	if e.Forced {
		s += " FORCED"
	}
	if e.Rule != "" {
		s += " rule=" + e.Rule
	}
	if e.Outcome != "" {
		s += " outcome=" + e.Outcome
	}
	if tm := e.Timings; !tm.IsZero() {
		if tm.FirstFailureAt != 0 {
			s += " first-failure=" + rel(tm.FirstFailureAt)
		}
		s += fmt.Sprintf(" detected=%s decided=%s written=%s verified=%s", rel(tm.DetectedAt), rel(tm.DecidedAt), rel(tm.WrittenAt), rel(tm.VerifiedAt))
		for _, sv := range tm.Servers {
			s += fmt.Sprintf(" %s=%s", sv.Server, rel(sv.VerifiedAt))
		}
	}
	if t, ok := e.Tallies[e.From]; ok && e.Kind != KindPolicy {
		s += fmt.Sprintf(" %s-down=%s %s-up=%s", e.From, list(t.Down), e.To, list(e.Tallies[e.To].Up))
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

func renderStatus(v View) string {
	var b strings.Builder
	fmt.Fprintf(&b, "now=%s active=%s since=%s mode=%s paused=%v", rel(v.Now), v.Active, rel(v.ActiveSince), v.Mode, v.Paused)
	if v.PausedUntil != 0 {
		fmt.Fprintf(&b, " paused-until=%s", rel(v.PausedUntil))
	}
	fmt.Fprintf(&b, " blocked=%v", v.Blocked)
	if v.Blocked {
		fmt.Fprintf(&b, " blocked-until=%s", rel(v.BlockedUntil))
	}
	b.WriteString("\n")
	if p := v.Pending; p != nil {
		fmt.Fprintf(&b, "pending: %s leaning=%s up=%s undecided=%s quorum=%d", p.Site, list(p.Leaning), list(p.Up), list(p.Undecided), p.Quorum)
		switch {
		case p.Then == nil:
			fmt.Fprintf(&b, " no countdown (rounds=%d in=%s)", p.Rounds, p.In)
		case p.Then.Rule != "":
			fmt.Fprintf(&b, " rounds=%d in=%s then=%s withheld by %s", p.Rounds, p.In, p.Then.Action, p.Then.Rule)
		default:
			fmt.Fprintf(&b, " rounds=%d in=%s then=%s", p.Rounds, p.In, p.Then.Action)
		}
		b.WriteString("\n")
	}
	if v.FailbackIn != 0 {
		fmt.Fprintf(&b, "failback in %s\n", v.FailbackIn)
	}
	if v.WithheldRule != "" {
		fmt.Fprintf(&b, "withheld since %s (%s): %s\n", rel(v.WithheldSince), v.WithheldRule, v.WithheldReason)
	}
	if v.LastDecision != "" {
		fmt.Fprintf(&b, "last decision: %s\n", v.LastDecision)
	}
	if d := v.Drill; d != nil {
		fmt.Fprintf(&b, "drill %d running since %s", d.ID, rel(d.StartedAt))
		if d.AbortedBy != 0 {
			fmt.Fprintf(&b, ", aborted by gen %d", d.AbortedBy)
		}
		b.WriteString("\n")
	}
	for _, w := range v.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

func renderProbes(v View, node string) string {
	var b strings.Builder
	for _, n := range v.Nodes {
		if node != "" && n.Node != node {
			continue
		}
		fmt.Fprintf(&b, "node %s: reported=%v stale=%v hash-mismatch=%v\n", n.Node, n.Reported, n.Stale, n.HashMismatch)
		for _, p := range n.Probes {
			ring := ""
			for _, ok := range p.History {
				if ok {
					ring += "+"
				} else {
					ring += "-"
				}
			}
			fmt.Fprintf(&b, "  %s/%s critical=%v state=%s oks=%d fails=%d fresh=%v ring=%s", p.Site, p.Probe, p.Critical, p.State, p.OKs, p.Fails, p.Fresh, ring)
			if !p.Last.OK && p.LastAt != 0 {
				fmt.Fprintf(&b, " last=%q", joinNonEmpty(p.Last.Class, p.Last.Phase, p.Last.Reason))
			}
			b.WriteString("\n")
		}
		for _, u := range n.Unknown {
			fmt.Fprintf(&b, "  unknown %s/%s count=%d\n", u.Site, u.Probe, u.Count)
		}
	}
	return b.String()
}
