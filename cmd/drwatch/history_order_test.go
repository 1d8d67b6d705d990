package main

import (
	"testing"

	"github.com/drwatch/drwatch/failover"
)

// drwatch history lists a manual move before the ack of the block it
// caused, though the log records the ack first at the same index; an ack
// command that lets an automatic flip through stays first, as the cause.
func TestHistoryListsAManualMoveBeforeTheAckItCaused(t *testing.T) {
	h := []failover.Entry{
		{Index: 100, Gen: 100, Kind: failover.KindAutoFailover},
		{Index: 130, Kind: failover.KindAck, Reason: "block acknowledged by manual_failback, gen 130"},
		{Index: 130, Gen: 130, Kind: failover.KindManualFailback},
		{Index: 140, Kind: failover.KindAck, Reason: "flap seen, fine"},
		{Index: 140, Gen: 140, Kind: failover.KindAutoFailover},
		{Index: 150, Kind: failover.KindPause},
	}
	var got []string
	for _, e := range readingOrder(h) {
		got = append(got, e.Kind)
	}
	want := []string{failover.KindAutoFailover, failover.KindManualFailback, failover.KindAck, failover.KindAck, failover.KindAutoFailover, failover.KindPause}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if h[1].Kind != failover.KindAck {
		t.Error("readingOrder reordered the caller's slice")
	}
}
