package probes

import (
	"context"
	"log/slog"
)

// TCPSpec configures a tcp probe.
type TCPSpec struct{}

// ProbeTCP is the tcp prober. Placeholder until the tcp probe lands.
func ProbeTCP(ctx context.Context, spec Spec, logger *slog.Logger) Result {
	return Result{Class: ClassConfig, Reason: "tcp probe not implemented yet"}
}
