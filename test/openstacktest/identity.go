package openstacktest

import (
	"context"
	"fmt"
	"net/http"
)

// keystoneAdmin makes Keystone objects with an admin token: the service
// users and catalog entries every service of the stack needs.
type keystoneAdmin struct {
	s     *Stack
	ctx   context.Context
	token string
	out   identityOut // the last answer
}

func (k *keystoneAdmin) do(method, path string, body any) error {
	k.out = identityOut{}
	_, err := k.s.call(k.ctx, method, k.s.AuthURL+path, k.token, body, &k.out)
	return err
}

// one finds the ID of the single object a filtered list names (kind
// "projects" or "roles").
func (k *keystoneAdmin) one(kind, name string) (string, error) {
	err := k.do(http.MethodGet, "/"+kind+"?name="+name, nil)
	var ids []string
	switch kind {
	case "projects":
		for _, p := range k.out.Projects {
			ids = append(ids, p.ID)
		}
	case "roles":
		for _, r := range k.out.Roles {
			ids = append(ids, r.ID)
		}
	}
	if err != nil || len(ids) != 1 {
		return "", fmt.Errorf("find %s %q: %d found, %v", kind, name, len(ids), err)
	}
	return ids[0], nil
}

// grant gives user the role in project.
func (k *keystoneAdmin) grant(project, user, role string) error {
	return k.do(http.MethodPut, fmt.Sprintf("/projects/%s/users/%s/roles/%s", project, user, role), nil)
}

// serviceUser makes user name with password pass, admin in the service
// project, as each OpenStack service authenticates its tokens.
func (k *keystoneAdmin) serviceUser(name, pass, serviceProject, adminRole string) error {
	if err := k.do(http.MethodPost, "/users", map[string]any{"user": map[string]any{"name": name, "domain_id": "default", "password": pass}}); err != nil {
		return fmt.Errorf("create %s user: %w", name, err)
	}
	if err := k.grant(serviceProject, k.out.User.ID, adminRole); err != nil {
		return fmt.Errorf("%s admin role: %w", name, err)
	}
	return nil
}

// catalog adds service name of type typ at url, on the public, internal
// and admin interfaces of the stack's region.
func (k *keystoneAdmin) catalog(typ, name, url string) error {
	if err := k.do(http.MethodPost, "/services", map[string]any{"service": map[string]any{"type": typ, "name": name}}); err != nil {
		return fmt.Errorf("catalog service %s: %w", typ, err)
	}
	id := k.out.Service.ID
	for _, iface := range []string{"public", "internal", "admin"} {
		if err := k.do(http.MethodPost, "/endpoints", map[string]any{"endpoint": map[string]any{
			"service_id": id, "interface": iface, "region_id": k.s.Region, "url": url}}); err != nil {
			return fmt.Errorf("catalog endpoint %s %s: %w", typ, iface, err)
		}
	}
	return nil
}

// service makes the service user (admin in project service) and the
// catalog entry of a service that authenticates as one user.
func (k *keystoneAdmin) service(user, pass, typ, name, url string) error {
	project, err := k.one("projects", "service")
	if err != nil {
		return err
	}
	role, err := k.one("roles", "admin")
	if err != nil {
		return err
	}
	if err := k.serviceUser(user, pass, project, role); err != nil {
		return err
	}
	return k.catalog(typ, name, url)
}
