package api

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/monitor/clusterhealth"
)

// docTypes are the JSON shapes docs/api.md documents, one "### `Name`"
// section with a field table each.
var docTypes = []struct {
	name string
	typ  reflect.Type
}{
	{"Status", reflect.TypeFor[Status]()},
	{"RaftStatus", reflect.TypeFor[RaftStatus]()},
	{"Member", reflect.TypeFor[cluster.Member]()},
	{"DNSCheck", reflect.TypeFor[DNSCheck]()},
	{"ServerCheck", reflect.TypeFor[ServerCheck]()},
	{"ReconcileStatus", reflect.TypeFor[ReconcileStatus]()},
	{"ClusterHealth", reflect.TypeFor[clusterhealth.Site]()},
	{"ClusterNodes", reflect.TypeFor[clusterhealth.Nodes]()},
	{"NodeProblem", reflect.TypeFor[clusterhealth.NodeProblem]()},
	{"ClusterPods", reflect.TypeFor[clusterhealth.Pods]()},
	{"PodProblem", reflect.TypeFor[clusterhealth.PodProblem]()},
	{"ClusterEvents", reflect.TypeFor[clusterhealth.Events]()},
	{"ClusterEvent", reflect.TypeFor[clusterhealth.Event]()},
	{"ClusterServices", reflect.TypeFor[clusterhealth.Services]()},
	{"PendingService", reflect.TypeFor[clusterhealth.PendingService]()},
	{"Lease", reflect.TypeFor[clusterhealth.Lease]()},
	{"RouteQuota", reflect.TypeFor[clusterhealth.Routes]()},
	{"View", reflect.TypeFor[failover.View]()},
	{"Policy", reflect.TypeFor[failover.Policy]()},
	{"GroupSummary", reflect.TypeFor[failover.GroupSummary]()},
	{"Group", reflect.TypeFor[failover.Group]()},
	{"FailbackPolicy", reflect.TypeFor[failover.FailbackPolicy]()},
	{"SitePolicy", reflect.TypeFor[failover.SitePolicy]()},
	{"ProbeRef", reflect.TypeFor[failover.ProbeRef]()},
	{"Record", reflect.TypeFor[failover.Record]()},
	{"Tally", reflect.TypeFor[failover.Tally]()},
	{"Pending", reflect.TypeFor[failover.Pending]()},
	{"PendingThen", reflect.TypeFor[failover.PendingThen]()},
	{"NodeView", reflect.TypeFor[failover.NodeView]()},
	{"ProbeView", reflect.TypeFor[failover.ProbeView]()},
	{"ProbeResult", reflect.TypeFor[failover.ProbeResult]()},
	{"UnknownProbe", reflect.TypeFor[failover.UnknownProbe]()},
	{"Desired", reflect.TypeFor[failover.Desired]()},
	{"RRset", reflect.TypeFor[failover.RRset]()},
	{"Entry", reflect.TypeFor[failover.Entry]()},
	{"RemediationRecord", reflect.TypeFor[failover.RemediationRecord]()},
	{"NodeEvidence", reflect.TypeFor[failover.NodeEvidence]()},
	{"ProbeFailure", reflect.TypeFor[failover.ProbeFailure]()},
	{"Timings", reflect.TypeFor[failover.Timings]()},
	{"ServerVerification", reflect.TypeFor[failover.ServerVerification]()},
	{"Summary", reflect.TypeFor[Summary]()},
	{"SummaryPage", reflect.TypeFor[SummaryPage]()},
	{"SummaryStatus", reflect.TypeFor[SummaryStatus]()},
	{"SummaryComponent", reflect.TypeFor[SummaryComponent]()},
	{"SummaryIncident", reflect.TypeFor[SummaryIncident]()},
	{"SummaryGroup", reflect.TypeFor[SummaryGroup]()},
	{"IncidentEvent", reflect.TypeFor[IncidentEvent]()},
	{"ErrorBody", reflect.TypeFor[ErrorBody]()},
	{"ErrorDetail", reflect.TypeFor[ErrorDetail]()},
	{"WriteRequest", reflect.TypeFor[WriteRequest]()},
	{"WriteResponse", reflect.TypeFor[WriteResponse]()},
	{"Result", reflect.TypeFor[failover.Result]()},
	{"DryRun", reflect.TypeFor[DryRun]()},
	{"GroupDryRun", reflect.TypeFor[GroupDryRun]()},
	{"Check", reflect.TypeFor[Check]()},
	{"DrillStatus", reflect.TypeFor[DrillStatus]()},
	{"DrillHistory", reflect.TypeFor[DrillHistory]()},
	{"DrillReport", reflect.TypeFor[DrillReport]()},
	{"DrillRecord", reflect.TypeFor[failover.DrillRecord]()},
	{"DrillCanary", reflect.TypeFor[failover.DrillCanary]()},
	{"DrillStepRecord", reflect.TypeFor[failover.DrillStepRecord]()},
	{"DrillCheck", reflect.TypeFor[failover.DrillCheck]()},
	{"DrillRTO", reflect.TypeFor[DrillRTO]()},
	{"WhatIf", reflect.TypeFor[WhatIf]()},
	{"WhatIfAnswer", reflect.TypeFor[failover.WhatIf]()},
	{"RecordChange", reflect.TypeFor[failover.RecordChange]()},
	{"WithheldRule", reflect.TypeFor[failover.WithheldRule]()},
}

type jsonField struct{ name, goType string }

// jsonFields lists t's fields as encoding/json names them, embedded
// structs flattened, in declaration order.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, f.Type.String()})
	}
	return out
}

// apiDoc reads docs/api.md: the field names listed under each
// "### `Name`" heading, and the ```json blocks in order.
func apiDoc(t *testing.T) (sections map[string][]string, order []string, jsonBlocks []string) {
	t.Helper()
	f, err := os.Open("../../../docs/api.md")
	if err != nil {
		t.Fatalf("docs/api.md: %v", err)
	}
	defer f.Close()
	sections = map[string][]string{}
	head := regexp.MustCompile("^### `([A-Za-z]+)`$")
	row := regexp.MustCompile("^\\| `([A-Za-z_]+)` \\|")
	cur := ""
	var block *strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case block != nil && line == "```":
			jsonBlocks = append(jsonBlocks, block.String())
			block = nil
		case block != nil:
			block.WriteString(line + "\n")
		case line == "```json":
			block = &strings.Builder{}
		case head.MatchString(line):
			cur = head.FindStringSubmatch(line)[1]
			if _, dup := sections[cur]; dup {
				t.Errorf("docs/api.md: section %s appears twice", cur)
			}
			sections[cur] = []string{}
			order = append(order, cur)
		case strings.HasPrefix(line, "#"):
			cur = ""
		case cur != "" && row.MatchString(line):
			sections[cur] = append(sections[cur], row.FindStringSubmatch(line)[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sections, order, jsonBlocks
}

// TestAPIDocMatchesTypes keeps docs/api.md honest: each documented type's
// table lists exactly its JSON fields, in declaration order, and no
// section documents a type that is not checked here.
func TestAPIDocMatchesTypes(t *testing.T) {
	sections, order, _ := apiDoc(t)
	known := map[string]bool{}
	for _, d := range docTypes {
		known[d.name] = true
		t.Run(d.name, func(t *testing.T) {
			got, ok := sections[d.name]
			if !ok {
				t.Fatalf("docs/api.md has no \"### `%s`\" section; want one listing %v", d.name, jsonFields(d.typ))
			}
			var want []string
			for _, f := range jsonFields(d.typ) {
				want = append(want, f.name)
			}
			if !slices.Equal(got, want) {
				t.Errorf("documented fields: got %v, want %v (the JSON fields of %s, in order)", got, want, d.typ)
			}
		})
	}
	for _, name := range order {
		if !known[name] {
			t.Errorf("docs/api.md documents %s, which no test checks: add it to docTypes or remove the section", name)
		}
	}
}

// TestAPIDocExamples decodes the documented examples strictly into the
// real types, so an example cannot show a field that does not exist, and
// checks the status example shows every top-level field of Status and View.
func TestAPIDocExamples(t *testing.T) {
	_, _, blocks := apiDoc(t)
	if len(blocks) != 2 {
		t.Fatalf("docs/api.md: got %d json examples, want 2 (status, summary)", len(blocks))
	}
	var st Status
	dec := json.NewDecoder(strings.NewReader(blocks[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("status example: %v", err)
	}
	var top struct {
		State map[string]json.RawMessage `json:"state"`
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal([]byte(blocks[0]), &all); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(blocks[0]), &top); err != nil {
		t.Fatal(err)
	}
	optional := map[string]bool{"reconcile": true, "paused_until": true, "paused_by": true, "pause_reason": true,
		"pending": true, "suspect": true, "withheld_rule": true, "withheld_reason": true, "withheld_since": true, "failback_in": true, "drill": true,
		"group": true, "groups": true}
	for _, tt := range []struct {
		typ reflect.Type
		got map[string]json.RawMessage
	}{{reflect.TypeFor[Status](), all}, {reflect.TypeFor[failover.View](), top.State}} {
		for _, f := range jsonFields(tt.typ) {
			if _, ok := tt.got[f.name]; !ok && !optional[f.name] {
				t.Errorf("status example: %s field %q missing", tt.typ, f.name)
			}
		}
	}
	if st.State.Active != failover.Backup || st.Leader != "a" || len(st.State.Nodes) != 1 {
		t.Errorf("status example decoded to an unexpected state: active %q leader %q nodes %d", st.State.Active, st.Leader, len(st.State.Nodes))
	}
	var sum Summary
	dec = json.NewDecoder(strings.NewReader(blocks[1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sum); err != nil {
		t.Fatalf("summary example: %v", err)
	}
	// The summary example is what BuildSummary makes of the page fixture,
	// minus the XSS marker planted in its reason.
	want := BuildSummary(fxFailedOver())
	want.Incidents[0].IncidentUpdates[2].Body = strings.TrimSuffix(want.Incidents[0].IncidentUpdates[2].Body, " "+fxXSS)
	gb, _ := json.Marshal(sum)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("summary example differs from BuildSummary(fixture):\n got %s\nwant %s", gb, wb)
	}
}
