package openstackauth

import (
	"errors"
	"fmt"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
)

// TokenProject is the ID of the project an authenticated provider's token
// is scoped to. A token without one (domain or system scope) is refused:
// with it, nothing would limit which project's resources a remediator
// treats as its own.
func TokenProject(provider *gophercloud.ProviderClient) (string, error) {
	res, ok := provider.GetAuthResult().(tokens.CreateResult)
	if !ok {
		return "", errors.New("keystone: no v3 token to read the project from: set project_id")
	}
	p, err := res.ExtractProject()
	if err != nil {
		return "", fmt.Errorf("keystone token project: %w", err)
	}
	if p == nil || p.ID == "" {
		return "", errors.New("keystone: the credentials are not scoped to a project: set project_id")
	}
	return p.ID, nil
}
