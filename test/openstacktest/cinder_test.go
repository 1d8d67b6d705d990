package openstacktest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/poll"
)

// Cinder with the fake driver takes a volume through Cinder's own state
// machine: created available, deleted until the API answers 404; a status
// written into the database is what the API then reports.
func TestCinderCreatesAndDeletesVolumes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	s := stack(t)
	meta := map[string]string{"cinder.csi.openstack.org/cluster": "k"}
	id, err := s.CreateVolume(ctx, s.Member, "pvc-1", meta)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.VolumeStatus(ctx, s.Member, id)
	if err != nil || v.Metadata["cinder.csi.openstack.org/cluster"] != "k" {
		t.Fatalf("got %+v, %v; want the cluster metadata k", v, err)
	}
	if err := s.SetVolumeStatus(ctx, id, "error_deleting", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if v, err := s.VolumeStatus(ctx, s.Member, id); err != nil || v.Status != "error_deleting" {
		t.Fatalf("got %+v, %v; want error_deleting", v, err)
	}
	if err := s.SetVolumeStatus(ctx, id, "available", time.Time{}); err != nil {
		t.Fatal(err)
	}
	tok, err := s.Token(ctx, s.Member)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.call(ctx, http.MethodDelete, s.volumesURL(s.Member)+"/volumes/"+id, tok, nil, nil); err != nil {
		t.Fatal(err)
	}
	poll.UntilEvery(t, time.Minute, 200*time.Millisecond, func() bool {
		_, err := s.VolumeStatus(ctx, s.Member, id)
		return errors.Is(err, ErrNotFound)
	}, "volume %s answers 404 after its delete", id)
}
