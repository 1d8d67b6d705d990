package tsig

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/drwatch/drwatch/internal/regularfile"
	"hash"
	"regexp"
	"strings"

	"github.com/miekg/dns"
)

// Supported algorithm names (lower-case FQDNs, as they appear on the wire).
const (
	HMACSHA256 = dns.HmacSHA256
	HMACSHA512 = dns.HmacSHA512
)

// Errors returned by the parser and provider.
var (
	ErrKeyFile   = errors.New("malformed tsig key file")
	ErrAlgorithm = errors.New("unsupported tsig algorithm")
	ErrSecret    = errors.New("tsig secret is not valid base64")
)

// Key is one TSIG key. Name and Algorithm are canonical lower-case FQDNs.
type Key struct {
	Name      string
	Algorithm string
	secret    []byte
}

// NewKey builds a key from its name, algorithm and base64 secret.
func NewKey(name, algorithm, secretB64 string) (Key, error) {
	alg, err := CanonicalAlgorithm(algorithm)
	if err != nil {
		return Key{}, err
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(secretB64))
	if err != nil || len(raw) == 0 {
		return Key{}, ErrSecret
	}
	if strings.TrimSpace(name) == "" {
		return Key{}, fmt.Errorf("%w: empty key name", ErrKeyFile)
	}
	k := Key{Name: dns.CanonicalName(strings.TrimSpace(name)), Algorithm: alg, secret: raw}
	// The name is shown in logs and errors (String); a name that holds the
	// secret means the secret was pasted into the key name, and showing the
	// name would show the secret (DESIGN §4 invariant 8). Compared without
	// case, since DNS names are case-folded.
	if strings.Contains(strings.ToLower(k.Name), strings.ToLower(k.Secret())) {
		return Key{}, fmt.Errorf("%w: the key name holds the key's secret (value not shown): name the key, and keep the secret in the key file", ErrKeyFile)
	}
	return k, nil
}

// Secret returns the base64 secret, for handing to external tools (nsupdate)
// in tests and benchmarks. Never log it.
func (k Key) Secret() string { return base64.StdEncoding.EncodeToString(k.secret) }

// String shows the key without its secret.
func (k Key) String() string {
	return fmt.Sprintf("tsig key %s (%s)", k.Name, strings.TrimSuffix(k.Algorithm, "."))
}

// GoString shows the key without its secret (for %#v).
func (k Key) GoString() string { return k.String() }

// CanonicalAlgorithm maps "hmac-sha256", "HMAC-SHA256." and friends to the wire name.
func CanonicalAlgorithm(a string) (string, error) {
	switch strings.ToLower(strings.TrimSuffix(strings.TrimSpace(a), ".")) {
	case "hmac-sha256", "":
		return HMACSHA256, nil
	case "hmac-sha512":
		return HMACSHA512, nil
	default:
		// Never echo arbitrary input at length: it may be a misplaced secret.
		return "", fmt.Errorf("%w (want hmac-sha256 or hmac-sha512)", ErrAlgorithm)
	}
}

var (
	// key "name" { algorithm hmac-sha256; secret "base64"; };
	reKeyClause = regexp.MustCompile(`(?s)key\s+"?([A-Za-z0-9._-]+)"?\s*\{(.*?)\}\s*;?`)
	reAlgorithm = regexp.MustCompile(`algorithm\s+"?([A-Za-z0-9.-]+)"?\s*;`)
	reSecret    = regexp.MustCompile(`secret\s+"([A-Za-z0-9+/=\s]*)"\s*;`)
	reBase64    = regexp.MustCompile(`^[A-Za-z0-9+/]+={0,2}$`)
)

// Parse reads a key from the contents of a key file. Two formats are accepted:
//
//   - a BIND key clause, as written by tsig-keygen or rndc-confgen:
//     key "name" { algorithm hmac-sha256; secret "base64"; };
//     (the name and algorithm come from the file; if name is given it must match)
//   - a file holding only the base64 secret; name and algorithm must then be
//     given (algorithm defaults to hmac-sha256).
//
// Errors never quote the file's contents.
func Parse(data []byte, name, algorithm string) (Key, error) {
	text := stripComments(string(data))
	if m := reKeyClause.FindStringSubmatch(text); m != nil {
		body := m[2]
		am := reAlgorithm.FindStringSubmatch(body)
		sm := reSecret.FindStringSubmatch(body)
		if am == nil || sm == nil {
			return Key{}, fmt.Errorf("%w: key clause needs algorithm and secret", ErrKeyFile)
		}
		fileName := dns.CanonicalName(m[1])
		if name != "" && dns.CanonicalName(name) != fileName {
			return Key{}, fmt.Errorf("%w: file holds key %s, configured key name is %s", ErrKeyFile, fileName, dns.CanonicalName(name))
		}
		if algorithm != "" {
			want, err := CanonicalAlgorithm(algorithm)
			if err != nil {
				return Key{}, err
			}
			got, err := CanonicalAlgorithm(am[1])
			if err != nil {
				return Key{}, err
			}
			if want != got {
				return Key{}, fmt.Errorf("%w: file says %s, configured %s", ErrKeyFile, strings.TrimSuffix(got, "."), strings.TrimSuffix(want, "."))
			}
		}
		secret := strings.Join(strings.Fields(sm[1]), "")
		return NewKey(fileName, am[1], secret)
	}
	secret := bareSecret(string(data))
	if secret == "" || !reBase64.MatchString(secret) {
		return Key{}, fmt.Errorf("%w: want a BIND key clause or a bare base64 secret", ErrKeyFile)
	}
	if name == "" {
		return Key{}, fmt.Errorf("%w: a bare secret file needs a configured key name", ErrKeyFile)
	}
	return NewKey(name, algorithm, secret)
}

// ReadFile reads and parses a key file (see Parse).
func ReadFile(path, name, algorithm string) (Key, error) {
	data, err := regularfile.Read("key_file", path)
	if err != nil {
		return Key{}, err
	}
	k, err := Parse(data, name, algorithm)
	if err != nil {
		return Key{}, fmt.Errorf("key_file: %w", err)
	}
	return k, nil
}

// stripComments removes BIND-style comments (#, // and /* */) that stand
// outside double quotes. A base64 secret may contain "//" or "/*", so
// anything inside quotes is kept as it is.
func stripComments(s string) string {
	var b strings.Builder
	inQuote := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote:
			if c == '"' {
				inQuote = false
			}
			b.WriteByte(c)
		case c == '"':
			inQuote = true
			b.WriteByte(c)
		case c == '#' || (c == '/' && i+1 < len(s) && s[i+1] == '/'):
			for i < len(s) && s[i] != '\n' {
				i++
			}
			if i < len(s) {
				b.WriteByte('\n')
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				i = len(s)
			} else {
				i += 2 + end + 1
			}
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// bareSecret returns the one non-comment line of a bare secret file. Only
// whole lines starting with '#' are comments here: "//" is valid base64.
func bareSecret(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) != 1 {
		return ""
	}
	return lines[0]
}

// Provider is a dns.TsigProvider over a fixed set of keys. Unlike miekg's
// map-based provider it refuses a message signed with the right key name but
// another algorithm (BIND answers BADKEY there too).
type Provider map[string]Key

// NewProvider indexes keys by name.
func NewProvider(keys ...Key) Provider {
	p := Provider{}
	for _, k := range keys {
		p[k.Name] = k
	}
	return p
}

func (p Provider) mac(msg []byte, t *dns.TSIG) ([]byte, error) {
	k, ok := p[dns.CanonicalName(t.Hdr.Name)]
	if !ok {
		return nil, dns.ErrSecret
	}
	if !strings.EqualFold(dns.CanonicalName(t.Algorithm), k.Algorithm) {
		return nil, dns.ErrKeyAlg
	}
	var h func() hash.Hash
	switch k.Algorithm {
	case HMACSHA256:
		h = sha256.New
	case HMACSHA512:
		h = sha512.New
	default:
		return nil, dns.ErrKeyAlg
	}
	m := hmac.New(h, k.secret)
	m.Write(msg)
	return m.Sum(nil), nil
}

// Generate implements dns.TsigProvider.
func (p Provider) Generate(msg []byte, t *dns.TSIG) ([]byte, error) { return p.mac(msg, t) }

// Verify implements dns.TsigProvider.
func (p Provider) Verify(msg []byte, t *dns.TSIG) error {
	want, err := p.mac(msg, t)
	if err != nil {
		return err
	}
	got, err := hex.DecodeString(t.MAC)
	if err != nil {
		return dns.ErrSig
	}
	if !hmac.Equal(got, want) {
		return dns.ErrSig
	}
	return nil
}
