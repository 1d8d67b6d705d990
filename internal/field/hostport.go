package field

import (
	"net"
	"strconv"
	"strings"
)

// HostPort records the problems of a "host:port" value at path: unset,
// not host:port, no host (a listener must bind an explicit address), or a
// port outside 1-65535. Every config section that names an address checks
// it with the same words.
func (es *Errors) HostPort(path, val string) {
	if strings.TrimSpace(val) == "" {
		es.Add(path, "required")
		return
	}
	host, port, err := net.SplitHostPort(val)
	if err != nil {
		es.Add(path, "%q is not host:port", val)
		return
	}
	if host == "" {
		es.Add(path, "%q has no host; bind an explicit address", val)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		es.Add(path, "port %q is not 1-65535", port)
	}
}
