package debris

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// Apply deletes one resource and follows it until OpenStack answers 404,
// for at most the delete timeout. Before the delete it rereads the
// resource and checks again its project, its naming or metadata, and that
// its Service or PersistentVolume is still absent (ErrPrecondition when
// the world moved on). It is idempotent: a resource already gone is
// success, one already deleting is followed. A volume still deleting or
// error_deleting at the deadline is a *StuckError (remediate.ErrNeedsAdmin:
// reported and parked, never retried); any other resource still there
// wraps ErrStillThere.
func (d *Debris) Apply(ctx context.Context, a remediate.Action) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.DeleteTimeout)
	defer cancel()
	c, err := d.clients(ctx)
	if err != nil {
		return err
	}
	defer c.done()
	switch data := a.Data.(type) {
	case lbData:
		return d.deleteLB(ctx, c, data)
	case fipData:
		return d.deleteFIP(ctx, c, data)
	case volData:
		return d.deleteVolume(ctx, c, data)
	}
	return fmt.Errorf("action %s: no resource data", a.Target)
}

func (d *Debris) deleteLB(ctx context.Context, c cloud, data lbData) error {
	lb, err := loadbalancers.Get(ctx, c.lb, data.ID).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return d.deleteVIPPort(ctx, c, data)
	}
	if err != nil {
		return fmt.Errorf("get load balancer %s: %w", data.ID, err)
	}
	svcs, ok := d.lbServices(*lb, c.project)
	if !ok {
		return fmt.Errorf("load balancer %s (%s) is no longer named as cluster %s's in project %s: %w", data.ID, lb.Name, d.cfg.ClusterName, c.project, remediate.ErrPrecondition)
	}
	if err := d.servicesStillAbsent(ctx, svcs); err != nil {
		return err
	}
	present, err := d.clusterObjects(ctx)
	if err != nil {
		return err
	}
	if present.referenced(lb.ID, lb.VipAddress) {
		return fmt.Errorf("load balancer %s is referred to by a Service: %w", data.ID, remediate.ErrPrecondition)
	}
	if lb.ProvisioningStatus != "PENDING_DELETE" {
		if c.net != nil && lb.VipPortID != "" {
			// The floating IP first: once the VIP port is gone it is on
			// no port and only its description ties it to the cluster.
			// One that must stay stays: deleting the port only frees it.
			fips, err := listFIPs(ctx, c.net, floatingips.ListOpts{ProjectID: c.project, PortID: lb.VipPortID})
			if err != nil {
				return err
			}
			for _, f := range fips {
				if keep := d.fipKeepReason(f, svcs, present); keep != "" {
					d.log.Info("floating IP on the VIP port stays", "floating_ip", f.ID, "why", keep)
					continue
				}
				if err := d.deleteAndFollow(ctx, "floating IP "+f.ID, func() error {
					return floatingips.Delete(ctx, c.net, f.ID).ExtractErr()
				}, func() (bool, string, error) { return fipGone(ctx, c, f.ID) }); err != nil {
					return err
				}
			}
		}
		err := loadbalancers.Delete(ctx, c.lb, data.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
		switch {
		case gophercloud.ResponseCodeIs(err, http.StatusNotFound):
		case gophercloud.ResponseCodeIs(err, http.StatusConflict):
			// Immutable (PENDING_*): something else changed it since our
			// read; the next Plan decides afresh.
			return fmt.Errorf("load balancer %s is busy: %w: %w", data.ID, err, remediate.ErrPrecondition)
		case err != nil:
			return fmt.Errorf("delete load balancer %s: %w", data.ID, err)
		}
	}
	if err := d.follow(ctx, "load balancer "+data.ID, func() (bool, string, error) {
		lb, err := loadbalancers.Get(ctx, c.lb, data.ID).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		return lb.ProvisioningStatus == "DELETED", lb.ProvisioningStatus, nil
	}); err != nil {
		return err
	}
	data.VIPPort = lb.VipPortID
	return d.deleteVIPPort(ctx, c, data)
}

// deleteVIPPort removes the load balancer's VIP port when Octavia left it
// behind: only a port of the project named octavia-lb-<the load
// balancer's ID> with an Octavia device owner.
func (d *Debris) deleteVIPPort(ctx context.Context, c cloud, data lbData) error {
	if c.net == nil || data.VIPPort == "" {
		return nil
	}
	p, err := ports.Get(ctx, c.net, data.VIPPort).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get VIP port %s: %w", data.VIPPort, err)
	}
	if p.Name != octaviaVIPPortPrefix+data.ID || !strings.HasPrefix(p.DeviceOwner, "Octavia") || p.ProjectID != c.project {
		d.log.Warn("VIP port left alone: not Octavia's port of the load balancer", "port", p.ID, "name", p.Name, "device_owner", p.DeviceOwner)
		return nil
	}
	return d.deleteAndFollow(ctx, "VIP port "+p.ID, func() error { return ports.Delete(ctx, c.net, p.ID).ExtractErr() },
		func() (bool, string, error) {
			_, err := ports.Get(ctx, c.net, p.ID).Extract()
			if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
				return true, "", nil
			}
			return false, "present", err
		})
}

func (d *Debris) deleteFIP(ctx context.Context, c cloud, data fipData) error {
	if c.net == nil {
		return fmt.Errorf("floating IP %s: no network endpoint in the catalog: %w", data.ID, remediate.ErrPrecondition)
	}
	f, err := floatingips.Get(ctx, c.net, data.ID).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get floating IP %s: %w", data.ID, err)
	}
	svc, ok := serviceFromFIPDescription(f.Description, d.cfg.ClusterName)
	switch {
	case !ok || svc != data.Service || f.ProjectID != c.project:
		return fmt.Errorf("floating IP %s is no longer cluster %s's in project %s: %w", data.ID, d.cfg.ClusterName, c.project, remediate.ErrPrecondition)
	case f.PortID != "":
		return fmt.Errorf("floating IP %s is on port %s again: %w", data.ID, f.PortID, remediate.ErrPrecondition)
	}
	if err := d.servicesStillAbsent(ctx, []ServiceRef{svc}); err != nil {
		return err
	}
	present, err := d.clusterObjects(ctx)
	if err != nil {
		return err
	}
	switch keep := d.reclaim.keepFIPReason(svc, d.cfg.Decommissioned); {
	case present.referenced(f.ID, f.FloatingIP):
		return fmt.Errorf("floating IP %s is referred to by a Service: %w", data.ID, remediate.ErrPrecondition)
	case keep != "":
		return fmt.Errorf("floating IP %s %s: %w", data.ID, keep, remediate.ErrPrecondition)
	}
	return d.deleteAndFollow(ctx, "floating IP "+data.ID, func() error { return floatingips.Delete(ctx, c.net, data.ID).ExtractErr() },
		func() (bool, string, error) { return fipGone(ctx, c, data.ID) })
}

func fipGone(ctx context.Context, c cloud, id string) (bool, string, error) {
	_, err := floatingips.Get(ctx, c.net, id).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return true, "", nil
	}
	return false, "present", err
}

func (d *Debris) deleteVolume(ctx context.Context, c cloud, data volData) error {
	v, err := volumes.Get(ctx, c.vol, data.ID).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get volume %s: %w", data.ID, err)
	}
	target := KindVolume + "/" + v.ID
	switch {
	case !d.volumeIsOurs(*v, c.project):
		return fmt.Errorf("volume %s no longer carries %s=%s and the CSI PV and PVC marks in project %s: %w", v.ID, CSIClusterKey, d.cfg.CSICluster, c.project, remediate.ErrPrecondition)
	case len(v.Attachments) > 0:
		return fmt.Errorf("volume %s is attached: %w", v.ID, remediate.ErrPrecondition)
	case v.Status == "error_deleting":
		return &StuckError{Target: target, Status: v.Status, Since: since(*v), Command: adminVolumeCommand(v.ID)}
	}
	if keep := d.reclaim.keepReason(v.ID, d.cfg.Decommissioned); keep != "" {
		return fmt.Errorf("volume %s %s: %w", v.ID, keep, remediate.ErrPrecondition)
	}
	if err := d.pvStillAbsent(ctx, v.ID, pvName(*v)); err != nil {
		return err
	}
	if v.Status != "deleting" {
		if !deletable(v.Status) {
			return fmt.Errorf("volume %s is %s: %w", v.ID, v.Status, remediate.ErrPrecondition)
		}
		err := volumes.Delete(ctx, c.vol, v.ID, volumes.DeleteOpts{}).ExtractErr()
		switch {
		case gophercloud.ResponseCodeIs(err, http.StatusNotFound):
			return nil
		case gophercloud.ResponseCodeIs(err, http.StatusBadRequest):
			// Cinder answers 400 when the status moved since our read.
			return fmt.Errorf("delete volume %s: %w: %w", v.ID, err, remediate.ErrPrecondition)
		case err != nil:
			return fmt.Errorf("delete volume %s: %w", v.ID, err)
		}
	}
	last := *v
	err = d.follow(ctx, "volume "+v.ID, func() (bool, string, error) {
		got, err := volumes.Get(ctx, c.vol, v.ID).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		last = *got
		return false, got.Status, nil
	})
	if err != nil && (last.Status == "deleting" || last.Status == "error_deleting") {
		return &StuckError{Target: target, Status: last.Status, Since: since(last), Command: adminVolumeCommand(v.ID)}
	}
	return err
}

// deleteAndFollow deletes (404 counts as done) and follows until gone.
func (d *Debris) deleteAndFollow(ctx context.Context, what string, del func() error, gone func() (bool, string, error)) error {
	if err := del(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return fmt.Errorf("delete %s: %w", what, err)
	}
	return d.follow(ctx, what, gone)
}

// follow polls gone until it says so or ctx (the delete timeout) ends.
// Read errors while following are retried until the deadline: the delete
// is under way.
func (d *Debris) follow(ctx context.Context, what string, gone func() (bool, string, error)) error {
	t := time.NewTicker(d.poll)
	defer t.Stop()
	last := ""
	for {
		ok, status, err := gone()
		switch {
		case err == nil && ok:
			return nil
		case err == nil:
			last = status
		case ctx.Err() == nil:
			d.log.Warn("read while following a delete", "target", what, "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s still %q after %s: %w", what, last, d.cfg.DeleteTimeout, ErrStillThere)
		case <-t.C:
		}
	}
}
