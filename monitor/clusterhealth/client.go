package clusterhealth

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/drwatch/drwatch/internal/kubeapi"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"k8s.io/client-go/rest"
)

// ErrNotRead is returned for any request but GET: this package's client
// cannot change a cluster, whatever code calls it.
var ErrNotRead = errors.New("cluster health client only reads")

// ErrTooLarge means an API answer exceeded MaxResponseBytes; the part it
// belongs to is reported unreadable rather than decoded.
var ErrTooLarge = errors.New("api answer too large")

// NewClient builds a read-only client for one site's cluster, from the
// same remediations.kubernetes settings the remediators use.
func NewClient(c kubeconfig.Cluster) (kubeapi.Interface, error) {
	rc, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	return newClient(rc, MaxResponseBytes)
}

func newClient(rc *rest.Config, maxBytes int64) (kubeapi.Interface, error) {
	cs, err := kubeapi.NewForConfig(readOnlyConfig(rc, maxBytes))
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return cs, nil
}

// readOnlyConfig is a copy of rc whose transport refuses writes and caps
// answers at maxBytes, at a rate that leaves the API server to the
// remediators.
func readOnlyConfig(rc *rest.Config, maxBytes int64) *rest.Config {
	rc = rest.CopyConfig(rc)
	// A few calls per interval; never let a loop here crowd out the
	// remediators that share the API server's priority level.
	rc.QPS, rc.Burst = 5, 10
	rc.Wrap(func(next http.RoundTripper) http.RoundTripper { return readOnly{next: next, max: maxBytes} })
	return rc
}

// readOnly refuses every method but GET before it leaves the process, and
// caps the bytes read of each answer.
type readOnly struct {
	next http.RoundTripper
	max  int64
}

func (t readOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet {
		if r.Body != nil {
			_ = r.Body.Close() // RoundTripper contract: the body is ours to close
		}
		return nil, fmt.Errorf("%s %s: %w", r.Method, r.URL.Path, ErrNotRead)
	}
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &capped{rc: resp.Body, max: t.max}
	return resp, nil
}

type capped struct {
	rc   io.ReadCloser
	n    int64
	max  int64
	over bool
}

func (c *capped) Read(p []byte) (int, error) {
	if c.over {
		return 0, fmt.Errorf("more than %d bytes: %w", c.max, ErrTooLarge)
	}
	if rem := c.max + 1 - c.n; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := c.rc.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		c.over = true
		return 0, fmt.Errorf("more than %d bytes: %w", c.max, ErrTooLarge)
	}
	return n, err
}

func (c *capped) Close() error { return c.rc.Close() }
