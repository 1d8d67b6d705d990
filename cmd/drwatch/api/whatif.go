package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// WhatIf is GET /api/v1/what-if/{scenario}: the decision core's answer to
// "what if every critical probe of a site failed now", computed on a copy
// of this node's replica. Nothing is proposed or written.
type WhatIf struct {
	ServedBy string    `json:"served_by"`
	ServedAt time.Time `json:"served_at"`
	Leader   string    `json:"leader"`
	// StaleSeconds is how old this replica's data is, as in Status.
	StaleSeconds float64         `json:"stale_seconds"`
	Answer       failover.WhatIf `json:"answer"`
	// Remediations says where the remediations a failover would run come
	// from: the decision core does not know the remediations config, so
	// it cannot list them.
	Remediations string `json:"remediations"`
}

// WhatIfRemediations is WhatIf.Remediations.
const WhatIfRemediations = "not known to the decision core: each node's remediations config decides them; " +
	"'drwatch remediate plan --active backup --config FILE' lists what they would do after a failover"

func (s *Server) whatIf(w http.ResponseWriter, r *http.Request) {
	ans, err := s.read.WhatIf(r.Context(), r.PathValue("scenario"))
	switch {
	case errors.Is(err, failover.ErrUnknownScenario):
		writeError(w, ErrorDetail{Code: CodeBadRequest, Message: err.Error()})
	case errors.Is(err, failover.ErrNoPolicy):
		writeError(w, ErrorDetail{Code: CodeUnavailable, Message: err.Error()})
	case err != nil:
		writeError(w, ErrorDetail{Code: CodeInternal, Message: err.Error()})
	default:
		writeJSON(w, http.StatusOK, ans)
	}
}

// WhatIf implements ReadModel: the decision core steps a copy of the local
// replica with the rounds the fresh watchers would report if every
// critical probe of the scenario's site failed from now on.
func (wb WatcherBackend) WhatIf(_ context.Context, scenario string) (WhatIf, error) {
	now := wb.Now()
	m := wb.Machine()
	ans, err := m.WhatIf(failover.WhatIfInput{Scenario: scenario, Now: now.UnixNano(), ProbeTimeout: wb.ProbeTimeout()})
	if err != nil {
		return WhatIf{}, err
	}
	out := WhatIf{ServedBy: wb.ID(), ServedAt: now, Leader: wb.Stats().LeaderID, Answer: ans, Remediations: WhatIfRemediations}
	if v := m.View(); v.Now > 0 {
		out.StaleSeconds = now.Sub(time.Unix(0, v.Now)).Seconds()
	}
	return out, nil
}
