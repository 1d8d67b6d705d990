package cluster

import (
	"context"
	"net"
	"testing"
	"time"
)

// A node bound to one specific IP dials its peers from that IP, so a proxy
// in front of a peer can filter by node.
func TestDialFromBindIP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tests := []struct {
		bind, wantSrc string
	}{
		{"127.0.0.2:7400", "127.0.0.2"},
		{"127.0.0.3:7400", "127.0.0.3"},
		{"0.0.0.0:7400", "127.0.0.1"}, // unspecified: the kernel picks
		{":7400", "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.bind, func(t *testing.T) {
			cfg := Config{BindAddr: tt.bind}.withDefaults()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := cfg.Dial(ctx, ln.Addr().String())
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			s, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.RemoteAddr().(*net.TCPAddr).IP.String(); got != tt.wantSrc {
				t.Errorf("bind %s: peer sees source %s, want %s", tt.bind, got, tt.wantSrc)
			}
		})
	}
}

func TestDialSourceScope(t *testing.T) {
	tests := []struct {
		bind, dst string
		want      bool // dial from the bind IP
	}{
		{"127.0.0.2:1", "127.0.0.1:2", true},
		{"127.0.0.2:1", "192.0.2.10:2", false}, // loopback source cannot reach a remote peer
		{"127.0.0.2:1", "peer.example:2", false},
		{"192.0.2.5:1", "192.0.2.10:2", true},
		{"192.0.2.5:1", "peer.example:2", true},
		{"192.0.2.5:1", "[2001:db8::1]:2", false},
		{"0.0.0.0:1", "192.0.2.10:2", false},
		{"not-an-ip:1", "192.0.2.10:2", false},
	}
	for _, tt := range tests {
		src := dialSource(tt.bind)
		got := src != nil && sameScope(src.IP, tt.dst)
		if got != tt.want {
			t.Errorf("bind %s dial %s: got from-bind-IP %v, want %v", tt.bind, tt.dst, got, tt.want)
		}
	}
}
