package cluster

import (
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/poll"
)

// TestServersTellWhatTheyRun: every node learns the log format and the
// release each server runs; the oldest format is what every server reads.
// A server that stops answering is unknown again, and holds the format
// back, while its last answer would have let it through.
func TestServersTellWhatTheyRun(t *testing.T) {
	formats, releases := []int{2, 1, 1}, []string{"r2", "r1", "r1b"}
	tc := newCluster(t, 3, func(i int, c *Config) {
		c.Format, c.Release, c.ServerInfoEvery = formats[i], releases[i], 50*time.Millisecond
	})
	tc.leader(30 * time.Second)
	a := tc.byID("a")
	want := map[string]ServerInfo{"a": {Format: 2, Release: "r2"}, "b": {Format: 1, Release: "r1"}, "c": {Format: 1, Release: "r1b"}}
	poll.For(t, 30*time.Second, "a knowing what every server runs", func() bool {
		infos := a.node.ServerInfos()
		if len(infos) != 3 {
			return false
		}
		for _, i := range infos {
			if w := want[i.ID]; i.Format != w.Format || i.Release != w.Release {
				return false
			}
		}
		return true
	})
	if got := a.node.MinFormat(); got != 1 {
		t.Errorf("MinFormat() = %d, want 1", got)
	}
	ms, err := a.node.Members(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if w := want[m.ID]; m.Format != w.Format || m.Release != w.Release {
			t.Errorf("member %s: format %d release %q, want %d %q", m.ID, m.Format, m.Release, w.Format, w.Release)
		}
	}
	if desc, newest, differ := DescribeReleases(ms); !differ || newest != 2 {
		t.Errorf("DescribeReleases = %q, %d, %v; want newest 2, differing", desc, newest, differ)
	}

	tc.stop(tc.byID("c"))
	poll.For(t, 30*time.Second, "a seeing c unknown once it stopped", func() bool {
		return a.node.MinFormat() == UnknownFormat
	})
}

// TestSameReleaseEverywhereIsNoUpgrade: servers that run one release and
// format are described as not differing, and one that cannot be asked
// does not make them differ.
func TestSameReleaseEverywhereIsNoUpgrade(t *testing.T) {
	ms := []Member{{ID: "a", Format: 1, Release: "r"}, {ID: "b", Format: 1, Release: "r"}, {ID: "c", Format: UnknownFormat}}
	if desc, _, differ := DescribeReleases(ms); differ {
		t.Errorf("DescribeReleases(%v) = %q, differing; want not", ms, desc)
	}
	ms[2] = Member{ID: "c", Format: LegacyFormat}
	if desc, _, differ := DescribeReleases(ms); !differ {
		t.Errorf("with a legacy server: DescribeReleases = %q, not differing; want differing", desc)
	}
}
