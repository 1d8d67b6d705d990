package config

import (
	"github.com/drwatch/drwatch/internal/field"
	"strings"
	"time"
)

func hasType(list, t string) bool {
	for _, s := range strings.Split(list, ",") {
		if s == t {
			return true
		}
	}
	return false
}

// derive resolves the defaults that depend on other fields.
func derive(c *Config, present func(string) bool) {
	c.Policy = c.Policy.WithDerivedDefaults(len(c.Peers), func(path string) bool { return present("policy." + path) })
	if c.DNS.RFC2136 != nil {
		// One exchange may take at most an interval (1s..5s): a query lost
		// while the server is down must not delay the retry after it returns.
		c.DNS.RFC2136.Timeout = min(max(c.Policy.Interval, time.Second), 5*time.Second)
	}
	deriveDrill(c, present)
	for _, site := range []struct {
		path string
		s    *Site
	}{{"sites.primary", &c.Sites.Primary}, {"sites.backup", &c.Sites.Backup}} {
		labels := field.Labels{}
		for i := range site.s.Probes {
			p := &site.s.Probes[i]
			pp := site.path + ".probes[" + labels.Next(p.Name, i) + "]"
			if !present(pp + ".timeout") {
				p.Timeout = c.Policy.Timeout
			}
		}
	}
}
