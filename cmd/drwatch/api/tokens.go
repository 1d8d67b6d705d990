package api

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"github.com/drwatch/drwatch/internal/regularfile"
	"strings"
)

// Tokens holds the bearer tokens allowed to write, each bound to the actor
// recorded in the history and to a role. Only SHA-256 digests are kept in
// memory.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	actor  string
	role   Role
	digest [sha256.Size]byte
}

// Role is what a token may write. Each role can do what the one before it can.
type Role string

// The roles, least power first.
const (
	// RoleRead writes nothing; reads need no token at all.
	RoleRead Role = "read"
	// RoleOperate may failover, failback, switchover, pause, resume, ack
	// and drill.
	RoleOperate Role = "operate"
	// RoleAdmin may also add and remove members. A line without a role
	// means admin: full power, as before roles existed.
	RoleAdmin Role = "admin"
)

var roleRank = map[Role]int{RoleRead: 1, RoleOperate: 2, RoleAdmin: 3}

// Allows reports whether r may do what needs requires.
func (r Role) Allows(needs Role) bool { return roleRank[r] >= roleRank[needs] }

// ErrNoTokens means the tokens file holds no usable entry.
var ErrNoTokens = errors.New("no tokens")

// LoadTokens reads a tokens file: one "actor:token" or "actor:token:role"
// per line, '#' comments and blank lines ignored. Without a role the token
// is admin. Errors name the line, never the token.
func LoadTokens(path string) (*Tokens, error) {
	b, err := regularfile.Read("tokens_file", path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTokens(b)
	if err != nil {
		return nil, fmt.Errorf("tokens_file: %w", err)
	}
	return t, nil
}

// ParseTokens parses the tokens file format (see LoadTokens).
func ParseTokens(b []byte) (*Tokens, error) {
	t := &Tokens{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 4096), 64*1024)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		actor, tok, role, ok := splitLine(s)
		switch {
		case !ok || actor == "" || tok == "":
			return nil, fmt.Errorf("line %d: want actor:token", line)
		case !validActor(actor):
			return nil, fmt.Errorf("line %d: actor must be letters, digits, '.', '_', '@' or '-'", line)
		case role == "":
			return nil, fmt.Errorf("line %d: role for %s must be read, operate or admin", line, actor)
		case len(tok) < 16:
			return nil, fmt.Errorf("line %d: token for %s is shorter than 16 characters", line, actor)
		case seen[tok]:
			return nil, fmt.Errorf("line %d: token for %s repeats an earlier one", line, actor)
		}
		seen[tok] = true
		t.entries = append(t.entries, tokenEntry{actor: actor, role: role, digest: sha256.Sum256([]byte(tok))})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.entries) == 0 {
		return nil, ErrNoTokens
	}
	return t, nil
}

// splitLine splits a tokens file line "actor:token[:role]". A token may
// hold ':' (it always could), so only one of the three role names after
// the last ':' is a role; anything else there is part of the token, with
// the admin power such a line always had. A last field that is empty or a
// role name in the wrong case is a mistyped role: role comes back "".
func splitLine(s string) (actor, tok string, role Role, ok bool) {
	actor, tok, ok = strings.Cut(s, ":")
	role = RoleAdmin
	if i := strings.LastIndex(tok, ":"); i >= 0 {
		last := strings.TrimSpace(tok[i+1:])
		switch {
		case roleRank[Role(last)] > 0:
			role, tok = Role(last), tok[:i]
		case last == "" || strings.EqualFold(last, string(RoleRead)) || strings.EqualFold(last, string(RoleOperate)) || strings.EqualFold(last, string(RoleAdmin)):
			role = ""
		}
	}
	return strings.TrimSpace(actor), strings.TrimSpace(tok), role, ok
}

// LineToken returns the token of a tokens file line "actor:token[:role]",
// the form a user copies into the CLI's token file.
func LineToken(s string) string {
	_, tok, _, _ := splitLine(s)
	return tok
}

func validActor(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("._@-", r):
		default:
			return false
		}
	}
	return true
}

// Actor returns the actor whose token matches (see Lookup).
func (t *Tokens) Actor(token string) (string, bool) {
	actor, _, ok := t.Lookup(token)
	return actor, ok
}

// Lookup returns the actor and role whose token matches. Every entry is
// compared, in constant time over digests of equal length, so timing
// reveals neither which entry matched nor how much of a token was right.
func (t *Tokens) Lookup(token string) (string, Role, bool) {
	if t == nil || token == "" {
		return "", "", false
	}
	d := sha256.Sum256([]byte(token))
	match := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(d[:], t.entries[i].digest[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return "", "", false
	}
	return t.entries[match].actor, t.entries[match].role, true
}
