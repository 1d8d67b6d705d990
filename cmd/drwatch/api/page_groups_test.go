package api

import (
	"bytes"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

var updatePageGolden = flag.Bool("update-page-golden", false, "rewrite testdata/page/*.html from the current page")

// TestPageWithoutGroupsRendersAsBefore renders every fixture of a cluster
// without failover groups, with a fixed nonce, and compares it byte for byte
// with the page the release before groups served: a cluster that never
// enables groups must see exactly the page it saw.
func TestPageWithoutGroupsRendersAsBefore(t *testing.T) {
	for name, st := range map[string]Status{
		"failed-over": fxFailedOver(), "pending": fxPending(), "no-leader": fxNoLeader(), "withheld": fxWithheld(),
	} {
		for _, partial := range []bool{false, true} {
			file := name + ".html"
			target := "/"
			if partial {
				file, target = name+".partial.html", "/?partial=1"
			}
			t.Run(file, func(t *testing.T) {
				rec := httptest.NewRecorder()
				servePageWithNonce(rec, httptest.NewRequest("GET", target, nil), st, fxNow, "00000000000000000000000000000000")
				got := rec.Body.Bytes()
				path := filepath.Join("testdata", "page", file)
				if *updatePageGolden {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("golden: %v (run with -update-page-golden on the release before groups)", err)
				}
				if !bytes.Equal(got, want) {
					i := 0
					for i < min(len(got), len(want)) && got[i] == want[i] {
						i++
					}
					t.Errorf("page differs from %s at byte %d: got %.200q, want %.200q", path, i, got[i:], want[i:])
				}
			})
		}
	}
}
