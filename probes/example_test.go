package probes_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"strings"
	"time"

	"github.com/drwatch/drwatch/probes"
)

// bannerProbe is a new probe type: connect, and read the first line the
// server sends, which must start with want (an SMTP "220", an SSH
// "SSH-2.0"). Like every prober it honours ctx's deadline, never retries,
// keeps no state and says which phase failed and why.
func bannerProbe(address, want string) probes.ProbeFunc {
	return func(ctx context.Context, spec probes.Spec, _ *slog.Logger) probes.Result {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", address)
		if err != nil {
			return probes.Result{Class: probes.ClassRefused, Phase: "connect", Reason: "connect: " + err.Error()}
		}
		defer conn.Close()
		if deadline, ok := ctx.Deadline(); ok {
			_ = conn.SetReadDeadline(deadline)
		}
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			return probes.Result{Class: probes.ClassTimeout, Phase: "first_byte", Reason: "read banner: " + err.Error()}
		}
		if line = strings.TrimSpace(line); !strings.HasPrefix(line, want) {
			return probes.Result{Class: probes.ClassBody, Phase: "body", Reason: fmt.Sprintf("banner %q, want %q", line, want)}
		}
		return probes.Result{OK: true}
	}
}

// A probe type is a ProbeFunc. Inside the package it is one line of the
// probe types table (types.go), with its section of Spec for its settings;
// the table makes Probers, the map the scheduler runs probes by. A caller
// adds its own type to a copy of that map, as here, where the settings
// (address, banner) are the prober's own.
func Example_newProbeType() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprint(conn, "220 mail.example.org ESMTP\r\n")
			conn.Close()
		}
	}()

	probers := maps.Clone(probes.Probers)
	probers["smtp-banner"] = bannerProbe(ln.Addr().String(), "220 ")
	probers["ssh-banner"] = bannerProbe(ln.Addr().String(), "SSH-2.0")
	s, err := probes.NewScheduler([]probes.SiteSpec{{Site: "primary", Probes: []probes.Spec{
		{Name: "mail", Type: "smtp-banner", Timeout: 10 * time.Second},
		{Name: "bastion", Type: "ssh-banner", Timeout: 10 * time.Second},
	}}}, probes.SchedulerOptions{Probers: probers})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range s.RunOnce(context.Background()).Results {
		fmt.Printf("%s/%s ok=%v class=%q reason=%q\n", r.Site, r.Probe, r.OK, r.Class, r.Reason)
	}
	// Output:
	// primary/mail ok=true class="" reason=""
	// primary/bastion ok=false class="body" reason="banner \"220 mail.example.org ESMTP\", want \"SSH-2.0\""
}
