package dnsservers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
)

// BenchmarkFlip flips N A records plus the fence in ONE atomic,
// compare-and-swap UPDATE against BIND9, and compares with nsupdate sending
// the same update (same prerequisites, deletes, adds and fence, over TCP)
// in the same run: ratio_vs_nsupdate = our time per flip / nsupdate's.
// The records sit in RRsets of up to 10 (1 -> 1x1, 100 -> 10x10, 1000 ->
// 100x10): 1,000 single-record RRsets do not fit in one 64 KiB DNS message
// (name compression pointers cannot reach past 16 KiB), so no atomic update
// could carry them.
func BenchmarkFlip(b *testing.B) {
	s := started(b, bind, bindErr)
	nsupdate, err := exec.LookPath("nsupdate")
	if err != nil {
		b.Fatalf("nsupdate not found in PATH: install Debian package bind9-dnsutils (make install-test-deps)")
	}
	keyFile := filepath.Join(b.TempDir(), "bench.key")
	if err := os.WriteFile(keyFile, []byte(fmt.Sprintf("key %q { algorithm hmac-sha256; secret %q; };\n", strings.TrimSuffix(KeySHA256, "."), s.Secret)), 0o600); err != nil {
		b.Fatal(err)
	}
	key, err := dnsprovider.NewTSIGKey(KeySHA256, "hmac-sha256", s.Secret)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 100, 1000} {
		// State survives the repeated calls b.Run makes while sizing b.N.
		nsState := &flipState{prefix: fmt.Sprintf("ns%d", n), n: n, fence: fmt.Sprintf("_bench-ns%d", n)}
		st := &flipState{prefix: fmt.Sprintf("go%d", n), n: n}
		p, err := dnsprovider.NewRFC2136WithKey(Zone, fmt.Sprintf("_bench-go%d", n), s.Addr, key, 30*time.Second, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			ctx := context.Background()
			ipA, ipB := "203.0.113.10", "198.51.100.10"

			// nsupdate baseline: same update shape on its own names and fence.
			runNS := func() (time.Duration, error) {
				script := nsState.nsupdateScript(s.Addr, ipA, ipB)
				t0 := time.Now()
				cmd := exec.Command(nsupdate, "-v", "-k", keyFile)
				cmd.Stdin = strings.NewReader(script)
				if out, err := cmd.CombinedOutput(); err != nil {
					return 0, fmt.Errorf("nsupdate: %v: %s", err, strings.TrimSpace(string(out)))
				}
				d := time.Since(t0)
				nsState.advance()
				return d, nil
			}
			var nsPer time.Duration
			var nsErr error
			if nsState.gen == 0 {
				_, nsErr = runNS() // first write creates the records and the fence
			}
			if nsErr == nil {
				var total time.Duration
				runs := min(max(b.N, 3), 10)
				for range runs {
					d, err := runNS()
					if err != nil {
						nsErr = err
						break
					}
					total += d
				}
				nsPer = total / time.Duration(runs)
			}

			if st.gen == 0 {
				if err := p.Swap(ctx, st.sets(""), st.sets(ipA), 0, 1); err != nil {
					b.Fatalf("seed swap: %v", err)
				}
				st.gen, st.cur = 1, ipA
			}
			b.ResetTimer()
			for range b.N {
				next := ipB
				if st.cur == ipB {
					next = ipA
				}
				if err := p.Swap(ctx, st.sets(st.cur), st.sets(next), st.gen, st.gen+1); err != nil {
					b.Fatalf("swap: %v", err)
				}
				st.cur, st.gen = next, st.gen+1
			}
			b.StopTimer()
			ours := b.Elapsed() / time.Duration(b.N)
			if nsErr != nil {
				// nsupdate cannot send this update as one message; there is no
				// like-for-like baseline, so no ratio is reported.
				b.Logf("no nsupdate baseline for %d records in one update: %v", n, nsErr)
				return
			}
			b.ReportMetric(float64(ours)/float64(nsPer), "ratio_vs_nsupdate")
			b.ReportMetric(float64(nsPer.Microseconds())/1000, "nsupdate_ms/op")
		})
	}
}

type flipState struct {
	prefix string
	n      int
	fence  string
	gen    uint64
	cur    string // "" before the first write
}

func (f *flipState) name(i int) string { return fmt.Sprintf("bench-%s-%d", f.prefix, i) }

func (f *flipState) perName() int { return min(f.n, 10) }
func (f *flipState) names() int   { return f.n / f.perName() }

// values returns an RRset's records for a base address ("" = none):
// 203.0.113.10 -> 203.0.113.10, .11, ...
func (f *flipState) values(base string) []string {
	if base == "" {
		return nil
	}
	prefix := base[:strings.LastIndex(base, ".")+1]
	out := make([]string, f.perName())
	for j := range out {
		out[j] = fmt.Sprintf("%s%d", prefix, 10+j)
	}
	return out
}

func (f *flipState) sets(ip string) []dnsprovider.RRset {
	out := make([]dnsprovider.RRset, f.names())
	for i := range out {
		out[i] = dnsprovider.RRset{Name: f.name(i), Type: "A", TTL: time.Minute, Values: f.values(ip)}
	}
	return out
}

// nsupdateScript is the same compare-and-swap as dnsprovider's Swap.
func (f *flipState) nsupdateScript(server, ipA, ipB string) string {
	host, port, _ := strings.Cut(server, ":")
	next := ipA
	if f.cur == ipA {
		next = ipB
	}
	var b strings.Builder
	fmt.Fprintf(&b, "server %s %s\nzone %s\n", host, port, Zone)
	for i := range f.names() {
		if f.cur == "" {
			fmt.Fprintf(&b, "prereq nxrrset %s.%s A\n", f.name(i), Zone)
		}
		for _, v := range f.values(f.cur) {
			fmt.Fprintf(&b, "prereq yxrrset %s.%s A %s\n", f.name(i), Zone, v)
		}
	}
	if f.gen == 0 {
		fmt.Fprintf(&b, "prereq nxrrset %s.%s TXT\n", f.fence, Zone)
	} else {
		fmt.Fprintf(&b, "prereq yxrrset %s.%s TXT \"gen=%d\"\n", f.fence, Zone, f.gen)
	}
	for i := range f.names() {
		fmt.Fprintf(&b, "update delete %s.%s A\n", f.name(i), Zone)
		for _, v := range f.values(next) {
			fmt.Fprintf(&b, "update add %s.%s 60 A %s\n", f.name(i), Zone, v)
		}
	}
	fmt.Fprintf(&b, "update delete %s.%s TXT\nupdate add %s.%s 60 TXT \"gen=%d\"\nsend\n", f.fence, Zone, f.fence, Zone, f.gen+1)
	return b.String()
}

func (f *flipState) advance() {
	if f.cur == "203.0.113.10" {
		f.cur = "198.51.100.10"
	} else {
		f.cur = "203.0.113.10"
	}
	f.gen++
}
