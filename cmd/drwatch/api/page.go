package api

import (
	"encoding/json"
	"html/template"
	"net/http"
)

// RegisterStatusPage adds the human status page at "/".
func RegisterStatusPage(s *Server, b Backend) {
	s.Handle("GET /{$}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := b.Status(r.Context())
		raw, _ := json.MarshalIndent(st, "", "  ")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = minimalPage.Execute(w, struct {
			S   Status
			Raw string
		}{st, string(raw)})
	}))
}

var minimalPage = template.Must(template.New("p").Parse(`<!doctype html><html><head><meta charset="utf-8">
<meta http-equiv="refresh" content="2"><title>drwatch</title></head><body>
<h1>Active: {{.S.State.Active}}</h1><p>served by {{.S.ServedBy}}, leader {{.S.Leader}}</p>
{{range .S.Warnings}}<p><strong>{{.}}</strong></p>{{end}}<pre>{{.Raw}}</pre></body></html>`))
