package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/test/kubetest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestRemediatePlan(t *testing.T) {
	kc := kubetest.Start(t)
	rc, err := clientcmd.BuildConfigFromFlags("", kc.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A node drwatch tainted, Ready again: dead-node-out-of-service plans
	// to remove its taint (no cloud check needed for that).
	n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "w1", Annotations: map[string]string{kube.AnnotationTainted: "2026-01-01T00:00:00Z"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: kube.TaintOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	zero := int32(0)
	lbl := map[string]string{"app": "web"}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := c.CoreV1().Nodes().Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	enabled := write("enabled.yaml", `
node: {id: a}
remediations:
  kubernetes:
    primary: {kubeconfig_file: `+kc.Kubeconfig+`}
    backup: {kubeconfig_file: `+kc.Kubeconfig+`}
  dead_node_out_of_service: {mode: dry-run}
  backup_warmup:
    mode: on
    workloads: [{kind: Deployment, namespace: default, name: web, replicas: 3}]
`)
	off := write("off.yaml", `
remediations:
  kubernetes:
    primary: {kubeconfig_file: `+kc.Kubeconfig+`}
`)
	bad := write("bad.yaml", "remediations: {drain_trap: {mode: always}}\n")
	// cloud-debris of a decommissioned cluster, its Keystone unreachable:
	// the plan names the remediation and the refusal, and plans nothing.
	debrisCfg := write("debris.yaml", `
remediations:
  cloud_debris:
    mode: dry-run
    cluster_name: k
    decommissioned: true
    auth_url: http://127.0.0.1:1/v3
    application_credential_id_file: `+write("ac-id", "id")+`
    application_credential_secret_file: `+write("ac-secret", "s3cr3t-value")+`
`)
	debrisBad := write("debris-bad.yaml", "remediations: {cloud_debris: {mode: on, cloud: c}}\n")

	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
		notWant  []string
	}{
		{"enabled, backup active", []string{"--config", enabled, "--active", "backup"}, 0,
			[]string{"dead-node-out-of-service  dry-run  node/w1", "untaint", "backup-warmup", "deployment/default/web", "scale", "from 0 to 3 replicas", "2 actions planned"}, nil},
		{"primary active: no warmup", []string{"--config", enabled, "--active", "primary"}, 0,
			[]string{"node/w1", "1 actions planned"}, []string{"deployment/default/web"}},
		{"named", []string{"backup-warmup", "--config", enabled, "--active", "backup"}, 0,
			[]string{"deployment/default/web", "1 actions planned by backup-warmup"}, []string{"node/w1"}},
		{"named while off", []string{"dead-node-out-of-service", "--config", off}, 0,
			[]string{"node/w1", "untaint", "decision: unknown"}, nil},
		{"nothing enabled", []string{"--config", off}, 0, []string{"no remediation is enabled"}, nil},
		{"no config", []string{}, 2, nil, nil},
		{"unknown name", []string{"reboot-everything", "--config", off}, 2, nil, nil},
		{"bad mode", []string{"--config", bad}, 1, []string{"drain_trap.mode"}, nil},
		{"bad active", []string{"--config", enabled, "--active", "mars"}, 2, nil, nil},
		{"cloud-debris, keystone down", []string{"--config", debrisCfg}, 1, []string{"cloud-debris", "keystone", "0 actions planned by cloud-debris"}, []string{"s3cr3t-value"}},
		{"cloud-debris without cluster_name", []string{"--config", debrisBad}, 1, []string{"remediations.cloud_debris.cluster_name: required when enabled"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DRWATCH_CONFIG", "")
			out, stderr, code := run(t, append([]string{"remediate", "plan"}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("got exit %d (%s), want %d\n%s", code, stderr, tt.wantCode, out)
			}
			all := out + stderr
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Fatalf("got output\n%s\nwant it to contain %q", all, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(all, w) {
					t.Fatalf("got output\n%s\nwant no %q", all, w)
				}
			}
		})
	}
	// Read-only: nothing changed.
	after, err := c.CoreV1().Nodes().Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || *d.Spec.Replicas != 0 {
		t.Fatalf("plan wrote: node rv %s -> %s, web replicas %d", before.ResourceVersion, after.ResourceVersion, *d.Spec.Replicas)
	}
}

// TestRemediatePlanShowsReportOnly: an action the cluster cannot take is
// shown as report-only, with why, even when its remediator is on; one the
// disruption brake holds is shown as held, with the brake's reason.
func TestRemediatePlanShowsReportOnly(t *testing.T) {
	a := remediate.Planned{Remediation: kube.DeadNodeName, Action: remediate.Action{Target: "node/w1", Verb: "taint",
		Reason: "node w1 Ready=Unknown for 10m0s and its instance is HOST_DOWN", ReportOnly: "Kubernetes v1.24.17 ..."}}
	m, reason := planColumns(a, remediate.ModeOn)
	if m != "report-only" || reason != a.Reason+"; not applied: Kubernetes v1.24.17 ..." {
		t.Fatalf("got %q %q, want report-only with the reason and why", m, reason)
	}
	a.ReportOnly = ""
	if m, reason := planColumns(a, remediate.ModeOn); m != "on" || reason != a.Reason {
		t.Fatalf("got %q %q, want on with the reason", m, reason)
	}
	a.Held = "disruption brake: 6 of 10 nodes qualify at once"
	if m, reason := planColumns(a, remediate.ModeOn); m != "held" || reason != a.Reason+"; not applied: "+a.Held {
		t.Fatalf("got %q %q, want held with the brake's reason", m, reason)
	}
}
