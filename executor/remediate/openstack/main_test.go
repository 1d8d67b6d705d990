package openstack

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
)

func check(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %q, want %q", what, got, want)
	}
}

var (
	podCIDR = netip.MustParsePrefix("198.19.0.0/16")
	cluster = Selector{NamePrefix: "k-", MetadataKey: "kluster", MetadataValue: "k"}
	t0      = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

func errorsIsPrecondition(err error) bool { return errors.Is(err, remediate.ErrPrecondition) }
