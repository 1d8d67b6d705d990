package debris

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ReclaimFileName is the reclaim record's file in a node's data
// directory.
const ReclaimFileName = "cloud-debris-reclaim.json"

// MaxReclaimEntries bounds each part of the reclaim record (volumes,
// Services). Dropping an entry is always safe: a volume or floating IP
// without one is kept and reported on a live cluster, never deleted.
const MaxReclaimEntries = 20000

// KeepFloatingIPAnnotation is cloud-provider-openstack's Service
// annotation that keeps the Service's floating IP when its load balancer
// is deleted.
const KeepFloatingIPAnnotation = "loadbalancer.openstack.org/keep-floatingip"

// reclaimEntry is what drwatch saw of the PersistentVolume that held one
// volume.
type reclaimEntry struct {
	PV     string `json:"pv"`
	Policy string `json:"policy"`
	// Seen is when it was last seen; the oldest go first past the bound.
	Seen time.Time `json:"seen"`
}

// serviceEntry is what drwatch saw of a LoadBalancer Service: whether it
// asked to keep its floating IP.
type serviceEntry struct {
	KeepFloatingIP bool      `json:"keep_floating_ip"`
	Seen           time.Time `json:"seen"`
}

// reclaimFile is the record as kept on disk.
type reclaimFile struct {
	Volumes  map[string]reclaimEntry `json:"volumes"`
	Services map[string]serviceEntry `json:"services"`
}

// reclaimRecord remembers, per Cinder volume ID, the reclaim policy of the
// PersistentVolume seen holding it while the PV existed: once the PV is
// gone, only that says whether Kubernetes asked for the volume's deletion
// (Delete) or to keep it (Retain). Retain is sticky: a volume ever kept is
// never taken for debris. With a path it survives restarts in the node's
// data directory; it is this node's own observation, not replicated, so a
// new leader that never saw a PV keeps its volume and reports it. The same
// holds for floating IPs: per Service (namespace/name), whether it was
// seen asking to keep its floating IP (sticky too).
type reclaimRecord struct {
	mu       sync.Mutex
	path     string
	entries  map[string]reclaimEntry
	services map[string]serviceEntry
}

// loadReclaimRecord reads path ("" for memory only). A missing file is an
// empty record; an unreadable one is an error (the node must not start
// believing it saw nothing while it has a record it cannot read).
func loadReclaimRecord(path string) (*reclaimRecord, error) {
	r := &reclaimRecord{path: path, entries: map[string]reclaimEntry{}, services: map[string]serviceEntry{}}
	if path == "" {
		return r, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read reclaim record: %w", err)
	}
	var f reclaimFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("decode reclaim record %s: %w", path, err)
	}
	if f.Volumes != nil {
		r.entries = f.Volumes
	}
	if f.Services != nil {
		r.services = f.Services
	}
	return r, nil
}

// observe records the policy of every PV holding a Cinder volume and
// whether each LoadBalancer Service asks to keep its floating IP, and
// writes the record when it changed.
func (r *reclaimRecord) observe(pvs []corev1.PersistentVolume, svcs []corev1.Service, now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for _, pv := range pvs {
		id := volumeHandle(pv)
		if id == "" {
			continue
		}
		policy := string(pv.Spec.PersistentVolumeReclaimPolicy)
		old, had := r.entries[id]
		if had && old.Policy == string(corev1.PersistentVolumeReclaimRetain) {
			policy = old.Policy
		}
		if !had || old.Policy != policy || old.PV != pv.Name {
			changed = true
		}
		r.entries[id] = reclaimEntry{PV: pv.Name, Policy: policy, Seen: now}
	}
	for _, svc := range svcs {
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		key := ServiceRef{Namespace: svc.Namespace, Name: svc.Name}.String()
		old, had := r.services[key]
		keep := old.KeepFloatingIP || keepsFloatingIP(svc)
		if !had || old.KeepFloatingIP != keep {
			changed = true
		}
		r.services[key] = serviceEntry{KeepFloatingIP: keep, Seen: now}
	}
	changed = evictOldest(r.entries, func(e reclaimEntry) time.Time { return e.Seen }) || changed
	changed = evictOldest(r.services, func(e serviceEntry) time.Time { return e.Seen }) || changed
	if !changed || r.path == "" {
		return nil
	}
	return r.save()
}

// save writes the record atomically (temporary file, then rename).
func (r *reclaimRecord) save() error {
	b, err := json.Marshal(reclaimFile{Volumes: r.entries, Services: r.services})
	if err != nil {
		return fmt.Errorf("encode reclaim record: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(r.path), ".reclaim-*")
	if err != nil {
		return fmt.Errorf("write reclaim record: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write reclaim record: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync reclaim record: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write reclaim record: %w", err)
	}
	if err := os.Rename(tmp.Name(), r.path); err != nil {
		return fmt.Errorf("write reclaim record: %w", err)
	}
	return nil
}

// get returns what was recorded for the volume.
func (r *reclaimRecord) get(volumeID string) (reclaimEntry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[volumeID]
	return e, ok
}

// keepReason says why the volume must be kept although its PV is gone,
// or "" when Kubernetes asked for its deletion. A recorded Retain (or
// Recycle) always keeps; no record keeps a live cluster's volume (an
// absent PV alone proves nothing: it may have been Retain and deleted by
// hand), not a decommissioned cluster's.
func (r *reclaimRecord) keepReason(volumeID string, decommissioned bool) string {
	e, ok := r.get(volumeID)
	switch {
	case ok && e.Policy != string(corev1.PersistentVolumeReclaimDelete):
		return fmt.Sprintf("kept: its PersistentVolume %s had reclaim policy %s when last seen at %s", e.PV, e.Policy, e.Seen.UTC().Format(time.RFC3339))
	case !ok && !decommissioned:
		return "kept: drwatch never saw its PersistentVolume ask for its deletion (reclaim policy Delete)"
	}
	return ""
}

// keepFIPReason says why a floating IP cloud-provider-openstack made for
// svc must be kept although the Service is gone, or "" when it may go: a
// Service seen asking to keep it always keeps it; one never seen keeps a
// live cluster's (an absent Service alone proves nothing: it may have
// asked), not a decommissioned cluster's.
func (r *reclaimRecord) keepFIPReason(svc ServiceRef, decommissioned bool) string {
	r.mu.Lock()
	e, ok := r.services[svc.String()]
	r.mu.Unlock()
	switch {
	case ok && e.KeepFloatingIP:
		return fmt.Sprintf("kept: its Service %s asked for it with %s when last seen at %s", svc, KeepFloatingIPAnnotation, e.Seen.UTC().Format(time.RFC3339))
	case !ok && !decommissioned:
		return fmt.Sprintf("kept: drwatch never saw its Service %s, so cannot tell whether it asked to keep it (%s)", svc, KeepFloatingIPAnnotation)
	}
	return ""
}

// keepsFloatingIP reads the annotation conservatively: the cloud provider
// keeps the floating IP for "true" only, but any value that does not parse
// as false (strconv.ParseBool) counts as keep here.
func keepsFloatingIP(svc corev1.Service) bool {
	v, ok := svc.Annotations[KeepFloatingIPAnnotation]
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

// evictOldest drops the entries seen longest ago past MaxReclaimEntries
// (ties by key) and says whether it dropped any.
func evictOldest[E any](m map[string]E, seen func(E) time.Time) bool {
	if len(m) <= MaxReclaimEntries {
		return false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := seen(m[keys[i]]), seen(m[keys[j]])
		if !a.Equal(b) {
			return a.Before(b)
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys[:len(keys)-MaxReclaimEntries] {
		delete(m, k)
	}
	return true
}

// volumeHandle is the Cinder volume a PV holds: its Cinder CSI volume
// handle or its in-tree Cinder volume ID.
func volumeHandle(pv corev1.PersistentVolume) string {
	switch {
	case pv.Spec.CSI != nil:
		return pv.Spec.CSI.VolumeHandle
	case pv.Spec.Cinder != nil:
		return pv.Spec.Cinder.VolumeID
	}
	return ""
}
