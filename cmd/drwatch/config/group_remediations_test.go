package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
)

// withGroupRemediations is groups.yaml with sections added to the
// remediations of group lms (lms), of group wiki (wiki) and to the
// top-level one (top), each empty for none.
func withGroupRemediations(t *testing.T, top, lms, wiki string) string {
	t.Helper()
	y := groupsYAML(t)
	add := func(after, section string) {
		if section == "" {
			return
		}
		if !strings.Contains(y, after) {
			t.Fatalf("groups.yaml lacks %q", after)
		}
		y = strings.Replace(y, after, after+section, 1)
	}
	add("  - name: lms\n", lms)
	add("  - name: wiki\n", wiki)
	if top != "" {
		y += top
	}
	return y
}

// A group's remediations load like the top-level section: defaulted,
// every repair off unless enabled, and its own (the other group's and the
// top-level one stay as they are).
func TestGroupRemediationsLoad(t *testing.T) {
	y := withGroupRemediations(t, "", `    remediations:
      interval: 1m
      kubernetes: { primary: { kubeconfig_file: /etc/drwatch/lms.kubeconfig } }
      orphaned_pods: { mode: dry-run, max_per_hour: 5 }
`, "")
	c, ps := loadString(t, y)
	if ps != nil {
		t.Fatalf("got problems:\n%v", ps)
	}
	lms, wiki := c.Groups[0].Remediations, c.Groups[1].Remediations
	if lms.Interval.String() != "1m0s" || lms.OrphanedPods.Mode != remediate.ModeDryRun || lms.OrphanedPods.MaxPerHour != 5 ||
		lms.OrphanedPods.MaxPerPass != remediate.DefaultMaxPerPass || lms.DrainTrap.Mode != remediate.ModeOff {
		t.Errorf("lms remediations: got %+v", lms)
	}
	if wiki.OrphanedPods.Mode != remediate.ModeOff || wiki.Interval != remediate.DefaultInterval {
		t.Errorf("wiki remediations: got %+v, want the defaults", wiki)
	}
	if c.Remediations.OrphanedPods.Mode != remediate.ModeOff {
		t.Errorf("top-level remediations took the group's: %+v", c.Remediations.OrphanedPods)
	}
}

// A config without groups loads its remediations exactly as before.
func TestRemediationsWithoutGroupsUnchanged(t *testing.T) {
	y := validYAML(t) + "remediations:\n  orphaned_pods: { mode: on }\n  kubernetes: { primary: { kubeconfig_file: /etc/drwatch/k.kubeconfig } }\n"
	c, ps := loadString(t, y)
	if ps != nil {
		t.Fatalf("got problems:\n%v", ps)
	}
	if len(c.Groups) != 0 || c.Remediations.OrphanedPods.Mode != remediate.ModeOn {
		t.Fatalf("got groups %v, remediations %+v", c.Groups, c.Remediations.OrphanedPods)
	}
}

// A problem in a group's remediations names its field by its full path,
// with its line.
func TestGroupRemediationProblemsNameTheirPath(t *testing.T) {
	y := withGroupRemediations(t, "", "", "    remediations:\n      orphaned_pods: { mode: sometimes, max_per_pass: -1 }\n")
	_, ps := loadString(t, y)
	for _, want := range []string{"groups[wiki].remediations.orphaned_pods.mode", "groups[wiki].remediations.orphaned_pods"} {
		found := false
		for _, p := range ps {
			if p.Path == want {
				found = true
				if p.Line == 0 {
					t.Errorf("%s: no line", p)
				}
			}
		}
		if !found {
			t.Errorf("got problems:\n%v\nwant one at %s", ps, want)
		}
	}
}

// Two sections that enable node-disrupting repairs on one Kubernetes
// cluster (same kubeconfig file and context) are refused, naming both
// paths: each runner has its own node disruption budget. Look-alikes are
// accepted: the same repairs on two clusters (another file, or another
// context of one file), a disrupting repair beside one that disrupts no
// node on one cluster, and two disrupting repairs in one section.
func TestNodeDisruptingRepairsOfOneClusterInOneSection(t *testing.T) {
	lmsOn := func(kube, repair string) string {
		return "    remediations:\n      kubernetes: { primary: " + kube + " }\n      " + repair + ": { mode: on }\n"
	}
	fileA := "{ kubeconfig_file: /etc/drwatch/region.kubeconfig }"
	fileAdot := "{ kubeconfig_file: /etc/drwatch/./region.kubeconfig }"
	fileActx := "{ kubeconfig_file: /etc/drwatch/region.kubeconfig, context: wiki }"
	fileB := "{ kubeconfig_file: /etc/drwatch/wiki.kubeconfig }"
	for _, tc := range []struct {
		name, top, lms, wiki string
		path, other          string // "" path: accepted
	}{
		{"two groups, one cluster", "", lmsOn(fileA, "orphaned_pods"), lmsOn(fileAdot, "dead_node_out_of_service"),
			"groups[wiki].remediations.dead_node_out_of_service.mode", "groups[lms].remediations.orphaned_pods.mode"},
		{"top level and a group, one cluster, dry-run",
			"remediations:\n  kubernetes: { primary: " + fileA + " }\n  orphaned_pods: { mode: dry-run }\n", "", lmsOn(fileA, "orphaned_pods"),
			"groups[wiki].remediations.orphaned_pods.mode", "remediations.orphaned_pods.mode"},
		{"two groups, two files", "", lmsOn(fileA, "orphaned_pods"), lmsOn(fileB, "orphaned_pods"), "", ""},
		{"two groups, two contexts of one file", "", lmsOn(fileA, "orphaned_pods"), lmsOn(fileActx, "orphaned_pods"), "", ""},
		{"one disrupts, the other not", "", lmsOn(fileA, "orphaned_pods"), lmsOn(fileA, "backup_warmup"), "", ""},
		{"one section, two disrupting repairs", "",
			"    remediations:\n      kubernetes: { primary: " + fileA + " }\n      orphaned_pods: { mode: on }\n      dead_node_out_of_service: { mode: on }\n", "", "", ""},
		{"one of them off", "", lmsOn(fileA, "orphaned_pods"),
			"    remediations:\n      kubernetes: { primary: " + fileA + " }\n      orphaned_pods: { mode: off }\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ps := loadString(t, withGroupRemediations(t, tc.top, tc.lms, tc.wiki))
			if tc.path == "" {
				if ps != nil {
					t.Fatalf("got problems:\n%v\nwant none", ps)
				}
				if c == nil {
					t.Fatal("no config")
				}
				return
			}
			for _, p := range ps {
				if p.Path == tc.path && strings.Contains(p.Msg, tc.other) && strings.Contains(p.Msg, "node disruption budget") {
					if p.Line == 0 {
						t.Errorf("%s: no line", p)
					}
					return
				}
			}
			t.Fatalf("got problems:\n%v\nwant %s naming %s", ps, tc.path, tc.other)
		})
	}
}

// The reference shows a group's remediations as the top-level section's
// fields, once, not every field a second time.
func TestReferenceShowsGroupRemediationsOnce(t *testing.T) {
	var b strings.Builder
	if err := WriteReference(&b); err != nil {
		t.Fatal(err)
	}
	ref := b.String()
	if !strings.Contains(ref, "| `groups[].remediations` |") || strings.Contains(ref, "groups[].remediations.") {
		t.Fatalf("reference: want the groups[].remediations row alone")
	}
	f, _ := reflect.TypeOf(Group{}).FieldByName("Remediations")
	if f.Type != reflect.TypeOf(Config{}.Remediations) {
		t.Fatalf("a group's remediations are %s, want the top-level section's type", f.Type)
	}
}
