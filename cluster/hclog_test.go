package cluster

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// raft formats some values lazily with hclog.Fmt (the initial
// configuration's servers, for one); the adapter renders them, so no log
// line carries a bare "%+v".
func TestHCLogRendersFormattedValues(t *testing.T) {
	var buf bytes.Buffer
	l := newHCLog(slog.New(slog.NewTextHandler(&buf, nil)), nil, nil)
	type server struct{ ID, Address string }
	l.Info("initial configuration", "index", 1, "servers", hclog.Fmt("%+v", []server{{"a", "10.0.0.1:7400"}}))
	l.With("peers", hclog.Fmt("%d peers", 3)).Info("with implied")
	out := buf.String()
	if strings.Contains(out, "%") {
		t.Errorf("got %q, want no format verbs", out)
	}
	for _, want := range []string{`servers="[{ID:a Address:10.0.0.1:7400}]"`, `peers="3 peers"`} {
		if !strings.Contains(out, want) {
			t.Errorf("got %q, want it to hold %s", out, want)
		}
	}
}
