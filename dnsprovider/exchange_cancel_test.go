package dnsprovider

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// A cancelled exchange ends at once, on a server that never answers, and
// says it was cancelled (not retryable): miekg/dns alone honours only a
// context's deadline, so a deposed leader's write waited out the whole
// exchange timeout. Look-alike: a deadline still ends it as a timeout,
// which is retryable.
func TestExchangeEndsWhenItsContextIsCancelled(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	got := make(chan struct{}, 8)
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			got <- struct{}{} // read, never answered
		}
	}()
	x := &exchanger{server: pc.LocalAddr().String(), zone: "example.org.", timeout: 10 * time.Minute}
	m := new(dns.Msg)
	m.SetQuestion("www.example.org.", dns.TypeA)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := x.exchange(ctx, m, "udp")
		done <- err
	}()
	<-got // the query reached the server: the exchange waits for its reply
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || IsRetryable(err) {
			t.Errorf("cancelled exchange: got %v (retryable %v), want context.Canceled, not retryable", err, IsRetryable(err))
		}
	case <-time.After(time.Minute):
		t.Fatal("the cancelled exchange still waits for the server, whose timeout is 10 minutes")
	}

	dctx, dcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer dcancel()
	m2 := new(dns.Msg)
	m2.SetQuestion("www.example.org.", dns.TypeA)
	if _, err := x.exchange(dctx, m2, "udp"); err == nil || errors.Is(err, context.Canceled) || !IsRetryable(err) {
		t.Errorf("exchange past its deadline: got %v, want a retryable timeout", err)
	}
}
