package probes

import (
	"context"
	"log/slog"
)

// KubernetesSpec configures a kubernetes probe.
type KubernetesSpec struct{}

// ProbeKubernetes is the kubernetes prober. Placeholder until the kubernetes probe lands.
func ProbeKubernetes(ctx context.Context, spec Spec, logger *slog.Logger) Result {
	return Result{Class: ClassConfig, Reason: "kubernetes probe not implemented yet"}
}
