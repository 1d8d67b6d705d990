package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/failover"
	"github.com/prometheus/client_golang/prometheus"
)

// Server is the HTTP API and status page of one node.
type Server struct {
	read       ReadModel
	groups     GroupReads // nil: the backend knows the default group only
	writes     Writes
	membership Membership
	tokens     *Tokens
	maxBody    int64
	log        *slog.Logger
	now        func() time.Time
	mux        *http.ServeMux
	// routine and moves limit each actor's writes (WriteLimits).
	routine, moves *writeLimiter
}

// Options configure a Server.
type Options struct {
	// Tokens authorise writes; nil refuses every write.
	Tokens *Tokens
	// MaxBodyBytes bounds request bodies (default 64 KiB).
	MaxBodyBytes int64
	Logger       *slog.Logger
	Now          func() time.Time
	// WriteLimits bound each actor's writes on this watcher; zero fields
	// take DefaultWriteLimits.
	WriteLimits WriteLimits
	// Registerer, if set, receives Listen's connection metrics (refused
	// and evicted connections, open ones, the cap).
	Registerer prometheus.Registerer
}

// MaxReasonLen bounds the reason recorded with a write.
const MaxReasonLen = 500

// NewServer builds the handler tree over one node's Backend. Each handler
// uses only the part it needs: reads the ReadModel, writes Writes, the
// members endpoints Membership.
func NewServer(b Backend, o Options) *Server {
	s := &Server{read: b, writes: b, membership: b, tokens: o.Tokens, maxBody: o.MaxBodyBytes, log: o.Logger, now: o.Now, mux: http.NewServeMux()}
	s.groups, _ = b.(GroupReads)
	if s.maxBody <= 0 {
		s.maxBody = 64 << 10
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.routine = newWriteLimiter(o.WriteLimits.Routine.orDefault(DefaultWriteLimits.Routine))
	s.moves = newWriteLimiter(o.WriteLimits.Moves.orDefault(DefaultWriteLimits.Moves))
	m := s.mux
	m.HandleFunc("GET /livez", s.livez)
	m.HandleFunc("GET /readyz", s.readyz)
	m.Handle("GET /metrics", b.Metrics())
	allow := map[string][]string{}
	route := func(method, path string, h http.HandlerFunc) {
		m.HandleFunc(method+" "+path, h)
		allow[path] = append(allow[path], method)
	}
	route(http.MethodGet, "/api/v1/status", s.status)
	route(http.MethodGet, "/api/v1/history", s.history)
	route(http.MethodGet, "/api/v1/groups", s.groupOverview)
	route(http.MethodGet, "/api/v1/explain/{gen}", s.explain)
	route(http.MethodGet, "/api/v1/what-if/{scenario}", s.whatIf)
	route(http.MethodGet, "/api/v1/members", s.members)
	route(http.MethodGet, "/api/v1/drills", s.drills)
	route(http.MethodPost, "/api/v1/drill", s.write(RoleOperate, s.routine, s.drillCmd))
	route(http.MethodPost, "/api/v1/failover", s.write(RoleOperate, s.moves, s.failoverCmd))
	route(http.MethodPost, "/api/v1/failback", s.write(RoleOperate, s.moves, s.failbackCmd))
	route(http.MethodPost, "/api/v1/switchover", s.write(RoleOperate, s.moves, s.switchoverCmd))
	route(http.MethodPost, "/api/v1/pause", s.write(RoleOperate, s.routine, s.pauseCmd))
	route(http.MethodPost, "/api/v1/resume", s.write(RoleOperate, s.routine, s.resumeCmd))
	route(http.MethodPost, "/api/v1/ack", s.write(RoleOperate, s.routine, s.ackCmd))
	route(http.MethodPost, "/api/v1/members/remove", s.removeMember)
	route(http.MethodPost, "/api/v1/members/add", s.addMember)
	// A known path asked with another method is 405, not the catch-all's
	// 404: the method-less pattern is less specific than the routes above.
	for path, methods := range allow {
		m.HandleFunc(path, methodNotAllowed(methods))
	}
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, ErrorDetail{Code: CodeNotFound, Message: "no such endpoint: " + r.Method + " " + r.URL.Path})
	})
	return s
}

// methodNotAllowed answers 405 naming the methods the path serves (GET
// serves HEAD too, as net/http does).
func methodNotAllowed(methods []string) http.HandlerFunc {
	var list []string
	for _, m := range methods {
		list = append(list, m)
		if m == http.MethodGet {
			list = append(list, http.MethodHead)
		}
	}
	allow := strings.Join(list, ", ")
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, ErrorDetail{Code: CodeMethod, Message: r.Method + " " + r.URL.Path + ": method not allowed; use " + allow})
	}
}

// Handle adds a route (the status page and badges register here).
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	s.mux.ServeHTTP(w, r)
}

func writeText(w http.ResponseWriter, status int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, s)
}

func (s *Server) livez(w http.ResponseWriter, _ *http.Request) {
	if err := s.read.Alive(); err != nil {
		writeText(w, http.StatusServiceUnavailable, "not alive: "+err.Error()+"\n")
		return
	}
	writeText(w, http.StatusOK, "ok\n")
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if err := s.read.Ready(); err != nil {
		writeText(w, http.StatusServiceUnavailable, "not ready: "+err.Error()+"\n")
		return
	}
	writeText(w, http.StatusOK, "ready\n")
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	group, ok := s.group(w, r)
	if !ok {
		return
	}
	var st Status
	if group == "" {
		st = s.read.Status(r.Context())
	} else {
		var err error
		if st, err = s.groups.GroupStatus(r.Context(), group); err != nil {
			writeGroupError(w, err)
			return
		}
	}
	if st.Warnings == nil {
		st.Warnings = []string{} // documented as an array; clients iterate it
	}
	writeJSON(w, http.StatusOK, st)
}

// group is the failover group a read names (?group=NAME): "" for none,
// and for the default group of a backend that knows no others. An unknown
// group is answered 404, naming the groups there are.
func (s *Server) group(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.URL.Query().Get("group")
	if name == "" {
		return "", true
	}
	var known []string
	if s.groups != nil {
		known = s.groups.Groups()
	}
	switch {
	case s.groups == nil && name == failover.DefaultGroup:
		return "", true
	case s.groups == nil:
		known = []string{failover.DefaultGroup}
	case slices.Contains(known, name):
		return name, true
	}
	writeGroupError(w, &UnknownGroupError{Group: name, Known: known})
	return "", false
}

// writeGroupError answers a per-group read's error: 404 for an unknown
// group, as for an unknown generation.
func writeGroupError(w http.ResponseWriter, err error) {
	writeError(w, ErrorDetail{Code: CodeNotFound, Message: err.Error()})
}

func (s *Server) groupOverview(w http.ResponseWriter, _ *http.Request) {
	groups := []failover.GroupSummary{}
	if s.groups != nil {
		groups = append(groups, s.groups.Overview()...)
	}
	writeJSON(w, http.StatusOK, struct {
		Groups []failover.GroupSummary `json:"groups"`
	}{groups})
}

func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	group, ok := s.group(w, r)
	if !ok {
		return
	}
	h := s.read.History()
	if group != "" {
		// As a group's view shows it: the group's entries and the cluster's.
		h = slices.DeleteFunc(h, func(e failover.Entry) bool { return !e.InGroup(group) })
	}
	writeJSON(w, http.StatusOK, struct {
		History []failover.Entry `json:"history"`
	}{h})
}

func (s *Server) explain(w http.ResponseWriter, r *http.Request) {
	gen, err := strconv.ParseUint(r.PathValue("gen"), 10, 64)
	if err != nil || gen == 0 {
		writeError(w, ErrorDetail{Code: CodeBadRequest, Message: "gen must be a positive integer"})
		return
	}
	group, ok := s.group(w, r)
	if !ok {
		return
	}
	var text string
	if group == "" {
		text, err = s.read.Explain(gen)
	} else {
		text, err = s.groups.GroupExplain(group, gen)
	}
	if err != nil {
		writeError(w, ErrorDetail{Code: CodeNotFound, Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Gen         uint64 `json:"gen"`
		Explanation string `json:"explanation"`
	}{gen, text})
}

func (s *Server) members(w http.ResponseWriter, r *http.Request) {
	ms, err := s.read.Members(r.Context())
	if err != nil {
		writeSubmitError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Members []cluster.Member `json:"members"`
	}{ms})
}

// authorize returns the actor behind the request's bearer token, if its
// role allows what needs requires.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, needs Role) (string, bool) {
	// The scheme is case-insensitive (RFC 9110 section 11.1).
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, "Bearer") || tok == "" {
		writeError(w, ErrorDetail{Code: CodeUnauthorized, Message: "writes need an Authorization: Bearer token"})
		return "", false
	}
	actor, role, ok := s.tokens.Lookup(tok)
	if !ok {
		writeError(w, ErrorDetail{Code: CodeUnauthorized, Message: "token not recognised"})
		return "", false
	}
	if !role.Allows(needs) {
		writeError(w, ErrorDetail{Code: CodeForbidden, Message: fmt.Sprintf("%s %s needs role %s; the token of %s has role %s", r.Method, r.URL.Path, needs, actor, role)})
		return "", false
	}
	return actor, true
}

// decode reads one JSON object, bounded in size, rejecting unknown fields.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err == nil && !utf8.Valid(body) {
		// encoding/json would silently turn invalid bytes into U+FFFD.
		writeError(w, ErrorDetail{Code: CodeBadRequest, Message: invalidUTF8Field(body) + ": is not valid UTF-8"})
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err == nil {
		err = dec.Decode(v)
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, ErrorDetail{Code: CodeTooLarge, Message: fmt.Sprintf("request body is larger than %d bytes", s.maxBody)})
			return false
		}
		if errors.Is(err, io.EOF) {
			writeError(w, ErrorDetail{Code: CodeBadRequest, Message: "request body is empty; want a JSON object"})
			return false
		}
		writeError(w, ErrorDetail{Code: CodeBadRequest, Message: "request body: " + err.Error()})
		return false
	}
	if dec.More() {
		writeError(w, ErrorDetail{Code: CodeBadRequest, Message: "request body holds more than one JSON value"})
		return false
	}
	return true
}

// checkReason trims the reason and checks it and the other text fields of
// req; it answers 400 and returns false when one is wrong.
func checkReason(w http.ResponseWriter, req *WriteRequest) bool {
	req.Reason = strings.TrimSpace(req.Reason)
	if !checkText(w, *req) {
		return false
	}
	switch {
	case req.Reason == "":
		writeError(w, ErrorDetail{Code: CodeBadRequest, Message: "reason is required: it is recorded in the history"})
		return false
	case len(req.Reason) > MaxReasonLen || !utf8.ValidString(req.Reason):
		writeError(w, ErrorDetail{Code: CodeBadRequest, Message: fmt.Sprintf("reason must be valid UTF-8 of at most %d bytes", MaxReasonLen)})
		return false
	}
	return true
}

// writeRequest authenticates a write that needs role needs, decodes its
// body and checks its text. When any of that fails it has answered the
// client, and ok is false.
func (s *Server) writeRequest(w http.ResponseWriter, r *http.Request, needs Role) (req WriteRequest, actor string, ok bool) {
	if actor, ok = s.authorize(w, r, needs); !ok {
		return req, "", false
	}
	if !s.decode(w, r, &req) || !checkReason(w, &req) {
		return req, "", false
	}
	return req, actor, true
}

// writeTimeout bounds how long a write waits for the cluster to commit it.
const writeTimeout = 15 * time.Second

type cmdBuilder func(req WriteRequest, actor string) (failover.Command, error)

// write handles a command endpoint: authenticate, decode, build, then
// either dry-run or submit, charging the submit to the actor in limit.
func (s *Server) write(needs Role, limit *writeLimiter, build cmdBuilder) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, actor, ok := s.writeRequest(w, r, needs)
		if !ok {
			return
		}
		cmd, err := build(req, actor)
		if err != nil {
			writeError(w, ErrorDetail{Code: CodeBadRequest, Message: err.Error()})
			return
		}
		if req.DryRun {
			dr, err := s.writes.DryRun(cmd)
			if err != nil {
				// As the write would fail: same code, same exit status.
				writeSubmitError(w, err)
				return
			}
			writeJSON(w, http.StatusOK, dr)
			return
		}
		if !s.allow(w, r, limit, actor, string(cmd.Type())) {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
		defer cancel()
		res, index, err := s.writes.Submit(ctx, cmd)
		if err != nil {
			s.log.Info("write refused", "actor", actor, "client_cert", clientIdentity(r), "type", cmd.Type(), "err", err)
			writeSubmitError(w, err)
			return
		}
		s.log.Info("write committed", "actor", actor, "client_cert", clientIdentity(r), "type", cmd.Type(), "index", index, "gen", res.Gen, "reason", req.Reason)
		writeJSON(w, http.StatusOK, WriteResponse{Index: index, Result: res, Actor: actor})
	}
}

// allow charges one write of type typ by actor to limit. When the actor
// has used up its writes it answers 429 with Retry-After and returns false.
// Only writes that would be proposed are charged: a dry run or a refused
// body writes nothing to the log.
func (s *Server) allow(w http.ResponseWriter, r *http.Request, limit *writeLimiter, actor, typ string) bool {
	retry, ok := limit.take(actor, s.now())
	if ok {
		return true
	}
	secs := int64(math.Ceil(retry.Seconds()))
	s.log.Warn("write rate limited", "actor", actor, "client_cert", clientIdentity(r), "type", typ, "retry_after_seconds", secs)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	writeError(w, ErrorDetail{Code: CodeRateLimited, Message: fmt.Sprintf("too many %s writes by %s: %s; retry in %ds",
		typ, actor, limit.limit, secs)})
	return false
}

// writeSubmitError maps the errors of the cluster and the decision core onto codes.
func writeSubmitError(w http.ResponseWriter, err error) {
	var ref *failover.RefusedError
	switch {
	case errors.As(err, &ref):
		writeError(w, ErrorDetail{Code: CodeRefused, Message: ref.Message, Rule: ref.Rule, Override: ref.Override})
	case errors.Is(err, cluster.ErrNeedsConfirmation):
		writeError(w, ErrorDetail{Code: CodeRefused, Rule: "needs_confirmation", Message: err.Error(), Override: "confirm explicitly (--confirm)"})
	case errors.Is(err, failover.ErrBadCommand), errors.Is(err, cluster.ErrBadNodeID):
		writeError(w, ErrorDetail{Code: CodeBadRequest, Message: err.Error()})
	case errors.Is(err, cluster.ErrNotSent) && (errors.Is(err, cluster.ErrNoLeader) || errors.Is(err, cluster.ErrNotLeader) || errors.Is(err, context.DeadlineExceeded)):
		writeError(w, ErrorDetail{Code: CodeNoLeader, Message: "this watcher knows no leader, so nothing was committed (is a quorum of watchers up and reachable from it?): " + err.Error(),
			Rule: "no_quorum", Override: "ask another watcher; with no quorum anywhere, only 'drwatch dns set --no-quorum' writes DNS"})
	case errors.Is(err, cluster.ErrNotMember):
		writeError(w, ErrorDetail{Code: CodeNotFound, Message: err.Error()})
	case errors.Is(err, cluster.ErrNoLeader), errors.Is(err, cluster.ErrNotLeader), errors.Is(err, context.DeadlineExceeded):
		writeError(w, ErrorDetail{Code: CodeTimeout, Message: "the leader did not confirm it in time, so it may still be committed: check 'drwatch history' before you repeat it: " + err.Error()})
	case errors.Is(err, failover.ErrNoPolicy), errors.Is(err, cluster.ErrShutdown):
		writeError(w, ErrorDetail{Code: CodeUnavailable, Message: err.Error()})
	default:
		writeError(w, ErrorDetail{Code: CodeInternal, Message: err.Error()})
	}
}

func site(s string) (failover.Site, error) {
	switch failover.Site(s) {
	case failover.Primary, failover.Backup:
		return failover.Site(s), nil
	}
	return "", fmt.Errorf("to must be primary or backup, got %q", s)
}

// groupOf is the failover group req names, "" for the default group:
// named or not, a command for it carries no group, so it encodes as it did
// before groups and any cluster's log format takes it. A request for
// every group names none, and only a failover may ask for every group.
func groupOf(req WriteRequest, allGroups bool) (string, error) {
	switch {
	case req.AllGroups && !allGroups:
		return "", errors.New("all_groups: only a failover moves every group")
	case req.AllGroups && req.Group != "":
		return "", fmt.Errorf("all_groups: and group %q at once; name one group or ask for every group", req.Group)
	case req.Group == failover.DefaultGroup:
		return "", nil
	}
	return req.Group, nil
}

func (s *Server) failoverCmd(req WriteRequest, actor string) (failover.Command, error) {
	to := req.To
	if to == "" {
		to = string(failover.Backup)
	}
	st, err := site(to)
	if err != nil {
		return failover.Command{}, err
	}
	group, err := groupOf(req, true)
	if err != nil {
		return failover.Command{}, err
	}
	return failover.Command{Payload: failover.Failover{To: st, Reason: req.Reason, Actor: actor, Force: req.Force, Group: group, AllGroups: req.AllGroups}}, nil
}

func (s *Server) switchoverCmd(req WriteRequest, actor string) (failover.Command, error) {
	st, err := site(req.To)
	if err != nil {
		return failover.Command{}, err
	}
	group, err := groupOf(req, false)
	if err != nil {
		return failover.Command{}, err
	}
	return failover.Command{Payload: failover.Failover{To: st, Reason: req.Reason, Actor: actor, Force: req.Force, Planned: true, Group: group}}, nil
}

func (s *Server) failbackCmd(req WriteRequest, actor string) (failover.Command, error) {
	group, err := groupOf(req, false)
	if err != nil {
		return failover.Command{}, err
	}
	return failover.Command{Payload: failover.Failback{Reason: req.Reason, Actor: actor, Force: req.Force, Group: group}}, nil
}

func (s *Server) pauseCmd(req WriteRequest, actor string) (failover.Command, error) {
	group, err := groupOf(req, false)
	if err != nil {
		return failover.Command{}, err
	}
	p := failover.Pause{Reason: req.Reason, Actor: actor, Group: group}
	if req.Until != "" {
		d, err := time.ParseDuration(req.Until)
		if err != nil || d <= 0 {
			return failover.Command{}, fmt.Errorf("until must be a positive duration such as 30m, got %q", req.Until)
		}
		p.Until = s.now().Add(d).UnixNano()
	}
	return failover.Command{Payload: p}, nil
}

func (s *Server) resumeCmd(req WriteRequest, actor string) (failover.Command, error) {
	group, err := groupOf(req, false)
	if err != nil {
		return failover.Command{}, err
	}
	return failover.Command{Payload: failover.Resume{Reason: req.Reason, Actor: actor, Group: group}}, nil
}

func (s *Server) ackCmd(req WriteRequest, actor string) (failover.Command, error) {
	group, err := groupOf(req, false)
	if err != nil {
		return failover.Command{}, err
	}
	return failover.Command{Payload: failover.Ack{Reason: req.Reason, Actor: actor, Group: group}}, nil
}

func (s *Server) removeMember(w http.ResponseWriter, r *http.Request) {
	req, actor, ok := s.writeRequest(w, r, RoleAdmin)
	if !ok {
		return
	}
	if req.ID == "" {
		writeError(w, ErrorDetail{Code: CodeBadRequest, Message: "id is required"})
		return
	}
	if !s.allow(w, r, s.moves, actor, "members remove") {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	if err := s.membership.RemoveMember(ctx, req.ID, req.Confirm, actor, req.Reason); err != nil {
		writeSubmitError(w, err)
		return
	}
	s.log.Info("member removed", "actor", actor, "client_cert", clientIdentity(r), "member", req.ID, "reason", req.Reason)
	writeJSON(w, http.StatusOK, struct {
		Removed string `json:"removed"`
		Actor   string `json:"actor"`
	}{req.ID, actor})
}

func (s *Server) addMember(w http.ResponseWriter, r *http.Request) {
	req, actor, ok := s.writeRequest(w, r, RoleAdmin)
	if !ok {
		return
	}
	if req.ID == "" || req.RaftAddr == "" {
		writeError(w, ErrorDetail{Code: CodeBadRequest, Message: "id and raft_addr are required"})
		return
	}
	if _, _, err := net.SplitHostPort(req.RaftAddr); err != nil {
		writeError(w, ErrorDetail{Code: CodeBadRequest, Message: "raft_addr must be host:port"})
		return
	}
	if !s.allow(w, r, s.moves, actor, "members add") {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	if err := s.membership.AddMember(ctx, req.ID, req.RaftAddr, actor, req.Reason); err != nil {
		writeSubmitError(w, err)
		return
	}
	s.log.Info("member added", "actor", actor, "client_cert", clientIdentity(r), "member", req.ID, "raft_addr", req.RaftAddr, "reason", req.Reason)
	writeJSON(w, http.StatusOK, struct {
		Added string `json:"added"`
		Actor string `json:"actor"`
	}{req.ID, actor})
}
