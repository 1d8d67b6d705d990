package main

import (
	"github.com/drwatch/drwatch/cmd/drwatch/api"
)

// registerPages adds the status page and badges to the API server.
func registerPages(s *api.Server, b api.Backend) {
	api.RegisterStatusPage(s, b)
}
