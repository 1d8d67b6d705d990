package probes

import (
	"context"
	"log/slog"
)

// HTTPSpec configures a http probe.
type HTTPSpec struct{}

// ProbeHTTP is the http prober. Placeholder until the http probe lands.
func ProbeHTTP(ctx context.Context, spec Spec, logger *slog.Logger) Result {
	return Result{Class: ClassConfig, Reason: "http probe not implemented yet"}
}
