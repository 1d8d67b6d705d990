package probes

import (
	"context"
	"log/slog"
)

// OctaviaSpec configures a octavia probe.
type OctaviaSpec struct{}

// ProbeOctavia is the octavia prober. Placeholder until the octavia probe lands.
func ProbeOctavia(ctx context.Context, spec Spec, logger *slog.Logger) Result {
	return Result{Class: ClassConfig, Reason: "octavia probe not implemented yet"}
}
