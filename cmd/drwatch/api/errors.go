package api

import (
	"encoding/json"
	"net/http"
)

// Code is a stable, machine-readable error code in every JSON error.
type Code string

// The error codes. Clients and scripts match on these, never on messages.
const (
	CodeBadRequest   Code = "bad_request"
	CodeUnauthorized Code = "unauthorized"
	CodeForbidden    Code = "forbidden" // the token's role does not allow the write; the message names the role it needs
	CodeNotFound     Code = "not_found"
	CodeTooLarge     Code = "too_large"
	CodeMethod       Code = "method_not_allowed"
	CodeRefused      Code = "refused"      // a safety rule refused the command; see Rule
	CodeNoLeader     Code = "no_leader"    // this node knows no leader; nothing was committed, another node may do it
	CodeTimeout      Code = "timeout"      // the leader did not confirm in time; the write may still be committed
	CodeUnavailable  Code = "unavailable"  // retry later
	CodeRateLimited  Code = "rate_limited" // the actor made too many writes; retry after the Retry-After header's seconds
	CodeInternal     Code = "internal"
)

// ErrorBody is the JSON shape of every error reply.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail describes one error.
type ErrorDetail struct {
	Code     Code   `json:"code"`
	Message  string `json:"message"`
	Rule     string `json:"rule,omitempty"`     // with CodeRefused: which safety rule
	Override string `json:"override,omitempty"` // with CodeRefused: how to override it, if it can be
}

var codeStatus = map[Code]int{
	CodeBadRequest:   http.StatusBadRequest,
	CodeUnauthorized: http.StatusUnauthorized,
	CodeForbidden:    http.StatusForbidden,
	CodeNotFound:     http.StatusNotFound,
	CodeTooLarge:     http.StatusRequestEntityTooLarge,
	CodeMethod:       http.StatusMethodNotAllowed,
	CodeRefused:      http.StatusConflict,
	CodeNoLeader:     http.StatusServiceUnavailable,
	CodeTimeout:      http.StatusGatewayTimeout,
	CodeUnavailable:  http.StatusServiceUnavailable,
	CodeRateLimited:  http.StatusTooManyRequests,
	CodeInternal:     http.StatusInternalServerError,
}

func writeError(w http.ResponseWriter, d ErrorDetail) {
	status, ok := codeStatus[d.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	if d.Code == CodeUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="drwatch"`)
	}
	writeJSON(w, status, ErrorBody{Error: d})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing to do
}
