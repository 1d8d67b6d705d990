package field

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func TestPathsJoinUnderTheSection(t *testing.T) {
	for _, c := range []struct{ prefix, path, want string }{
		{"sites.primary.probes[web]", "url", "sites.primary.probes[web].url"},
		{"dns", "records[lms].ttl", "dns.records[lms].ttl"},
		{"dns.records", "[lms].ttl", "dns.records[lms].ttl"},
		{"remediations.dead_node", "", "remediations.dead_node"},
		{"", "url", "url"},
	} {
		if got := Join(c.prefix, c.path); got != c.want {
			t.Errorf("Join(%q, %q) = %q, want %q", c.prefix, c.path, got, c.want)
		}
	}
	var es Errors
	es.Add("url", "has no host")
	es.Add("", "needs credentials")
	got := es.Under("sites.backup.probes[k8s]")
	want := Errors{{"sites.backup.probes[k8s].url", "has no host"}, {"sites.backup.probes[k8s]", "needs credentials"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Under = %#v, want %#v", got, want)
	}
	if es[0].Path != "url" {
		t.Errorf("Under changed the receiver: %#v", es)
	}
}

func TestNoProblemIsANilError(t *testing.T) {
	var es Errors
	if err := es.Err(); err != nil {
		t.Errorf("Err of no problem = %v, want nil", err)
	}
	es.Add("ttl", "%d must be 1-86400 seconds", 0)
	if err := es.Err(); err == nil || err.Error() != "ttl: 0 must be 1-86400 seconds" {
		t.Errorf("Err = %v, want the one problem", err)
	}
}

func TestFromKeepsPathsThroughJoinsAndWraps(t *testing.T) {
	inner := Errors{{"a", "x"}, {"b", "y"}}
	err := errors.Join(inner, Error{"c", "z"}, errors.New("plain"))
	got := From(err)
	want := Errors{{"a", "x"}, {"b", "y"}, {"c", "z"}, {"", "plain"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("From(join) = %#v, want %#v", got, want)
	}
	if got := From(nil); got != nil {
		t.Errorf("From(nil) = %#v, want nil", got)
	}
	// A wrapped Errors carries context the caller added: keep it as text
	// rather than dropping it.
	wrapped := fmt.Errorf("policy: %w", inner)
	if got := From(wrapped); len(got) != 1 || got[0].Msg != wrapped.Error() {
		t.Errorf("From(wrapped) = %#v, want the whole text as one problem", got)
	}
}

func TestLabelsNameRepeatedAndUnnamedItems(t *testing.T) {
	l := Labels{}
	var got []string
	for i, name := range []string{"web", "", "web", "api", "web"} {
		got = append(got, l.Next(name, i))
	}
	want := []string{"web", "1", "web#2", "api", "web#3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("labels = %q, want %q", got, want)
	}
}
