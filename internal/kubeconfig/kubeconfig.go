package kubeconfig

import (
	"errors"
	"fmt"

	"github.com/drwatch/drwatch/internal/regularfile"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrNotKubeconfig: the file could not be decoded as a kubeconfig. The
// decoder's own message is dropped, since it may quote the content.
var ErrNotKubeconfig = errors.New("not a kubeconfig (content not shown)")

// RESTConfig reads the kubeconfig at path, which the field named field
// holds, and returns the client configuration of the context and the
// overrides over (over may be nil: the current context). Relative paths
// inside the file resolve against its directory, as kubectl resolves them.
func RESTConfig(field, path string, over *clientcmd.ConfigOverrides) (*rest.Config, error) {
	b, err := regularfile.Read(field, path)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.Load(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, ErrNotKubeconfig)
	}
	for _, c := range cfg.Clusters {
		c.LocationOfOrigin = path
	}
	for _, a := range cfg.AuthInfos {
		a.LocationOfOrigin = path
	}
	if err := clientcmd.ResolveLocalPaths(cfg); err != nil {
		// Its message holds the path.
		return nil, fmt.Errorf("%s: cannot resolve the relative paths it names (%s)", field, regularfile.ValueNotShown)
	}
	if over == nil {
		over = &clientcmd.ConfigOverrides{}
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, over.CurrentContext, over, nil).ClientConfig()
	if err != nil {
		// clientcmd's errors name contexts and the files the kubeconfig
		// names, not the kubeconfig's own path or its credentials.
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return rc, nil
}
