package api

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Tokens holds the bearer tokens allowed to write, each bound to the actor
// recorded in the history. Only SHA-256 digests are kept in memory.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	actor  string
	digest [sha256.Size]byte
}

// ErrNoTokens means the tokens file holds no usable entry.
var ErrNoTokens = errors.New("no tokens")

// LoadTokens reads a tokens file: one "actor:token" per line, '#' comments
// and blank lines ignored. Errors name the line, never the token.
func LoadTokens(path string) (*Tokens, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	t, err := ParseTokens(b)
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
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
		actor, tok, ok := strings.Cut(s, ":")
		actor, tok = strings.TrimSpace(actor), strings.TrimSpace(tok)
		switch {
		case !ok || actor == "" || tok == "":
			return nil, fmt.Errorf("line %d: want actor:token", line)
		case !validActor(actor):
			return nil, fmt.Errorf("line %d: actor must be letters, digits, '.', '_', '@' or '-'", line)
		case len(tok) < 16:
			return nil, fmt.Errorf("line %d: token for %s is shorter than 16 characters", line, actor)
		case seen[tok]:
			return nil, fmt.Errorf("line %d: token for %s repeats an earlier one", line, actor)
		}
		seen[tok] = true
		t.entries = append(t.entries, tokenEntry{actor: actor, digest: sha256.Sum256([]byte(tok))})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.entries) == 0 {
		return nil, ErrNoTokens
	}
	return t, nil
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

// Actor returns the actor whose token matches. Every entry is compared, in
// constant time over digests of equal length, so timing reveals neither
// which entry matched nor how much of a token was right.
func (t *Tokens) Actor(token string) (string, bool) {
	if t == nil || token == "" {
		return "", false
	}
	d := sha256.Sum256([]byte(token))
	match := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(d[:], t.entries[i].digest[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return "", false
	}
	return t.entries[match].actor, true
}
