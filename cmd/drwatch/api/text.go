package api

import (
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/drwatch/drwatch/failover"
)

// checkText refuses a write whose free text could forge a history row or
// drive a terminal (failover.CheckText), with a 400 naming the field.
func checkText(w http.ResponseWriter, req WriteRequest) bool {
	for _, f := range []struct{ name, v string }{
		{"reason", req.Reason}, {"to", req.To}, {"until", req.Until}, {"id", req.ID}, {"raft_addr", req.RaftAddr}, {"group", req.Group},
	} {
		if err := failover.CheckText(f.v); err != nil {
			writeError(w, ErrorDetail{Code: CodeBadRequest, Message: f.name + ": " + err.Error()})
			return false
		}
	}
	return true
}

// invalidUTF8Field names the top-level field of a JSON object whose value
// holds invalid UTF-8, or "request body".
func invalidUTF8Field(body []byte) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) == nil {
		for name, v := range fields {
			if !utf8.Valid(v) {
				return name
			}
		}
	}
	return "request body"
}
