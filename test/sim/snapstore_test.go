package sim

import (
	"io"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
)

// A restarted node restores the newest complete snapshot, as from
// raft.FileSnapshotStore: not an older one whose writing finished last
// (a follower's own snapshot racing the install of a newer one from the
// leader), not a cancelled one, not one still being written. The
// look-alike, snapshots finishing in order, lists the last one first.
func TestSnapshotStoreRestoresTheNewestCompleteSnapshot(t *testing.T) {
	type step struct {
		index, term uint64
		end         string // "close", "cancel" or "" (still writing)
	}
	for _, tc := range []struct {
		name  string
		steps []step
		want  []uint64 // indexes List returns, newest first
	}{
		{"in order", []step{{10, 1, "close"}, {20, 1, "close"}, {30, 2, "close"}}, []uint64{30, 20}},
		{"an older snapshot finishing after a newer one", []step{{40, 2, "close"}, {30, 2, "close"}}, []uint64{40, 30}},
		{"cancelled and unfinished snapshots", []step{{40, 2, "close"}, {50, 2, "cancel"}, {60, 3, ""}}, []uint64{40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSnapshotStore(2)
			for _, st := range tc.steps {
				sink, err := s.Create(1, st.index, st.term, raft.Configuration{}, 1, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := sink.Write([]byte(sink.ID())); err != nil {
					t.Fatal(err)
				}
				switch st.end {
				case "close":
					err = sink.Close()
				case "cancel":
					err = sink.Cancel()
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			metas, err := s.List()
			if err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for _, m := range metas {
				got = append(got, m.Index)
				meta, rc, err := s.Open(m.ID)
				if err != nil {
					t.Fatalf("open %s: %v", m.ID, err)
				}
				b, _ := io.ReadAll(rc)
				if string(b) != m.ID || meta.Size != int64(len(b)) {
					t.Errorf("snapshot %s holds %q (size %d), want its own bytes", m.ID, b, meta.Size)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("List returns indexes %v, want %v", got, tc.want)
			}
		})
	}
}
