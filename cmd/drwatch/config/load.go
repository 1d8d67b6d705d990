package config

import (
	"errors"
	"fmt"
	"github.com/drwatch/drwatch/internal/field"
	"github.com/drwatch/drwatch/internal/regularfile"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// MaxFileSize bounds the configuration file; anything larger is refused
// before parsing. It is the bound of every file a field names.
const MaxFileSize = regularfile.MaxSize

// Options change what [Load] checks.
type Options struct {
	// SkipFileChecks skips checking that every *_file exists and is readable,
	// for validating a config on a machine other than the one it runs on.
	SkipFileChecks bool
	// Sections, when set, limits the rules to these top-level sections
	// (e.g. "remediations"), so that a command needing one section can read
	// a partial copy of a node's config. The document's shape is still
	// checked everywhere: unknown keys, values of the wrong type and a
	// secret pasted into a file field are refused wherever they are.
	Sections []string
}

// covers reports whether the rules apply to path.
func (o Options) covers(path string) bool {
	if len(o.Sections) == 0 {
		return true
	}
	for _, s := range o.Sections {
		if path == s || strings.HasPrefix(path, s+".") || strings.HasPrefix(path, s+"[") {
			return true
		}
	}
	return false
}

// Load reads, decodes, defaults and validates the file at path. On failure
// the error is a [Problems] listing every problem found.
func Load(path string, opts Options) (*Config, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, Problems{{File: path, Msg: err.Error()}}
	}
	return Parse(path, data, opts)
}

// readLimited reads the config file as every file field's file is read:
// a regular file of at most MaxFileSize bytes, so that --config /dev/zero
// or a FIFO is refused at once instead of read without end or hung on.
func readLimited(path string) ([]byte, error) {
	b, err := regularfile.Read("config file", path)
	if err != nil {
		return nil, errors.New(regularfile.Reason(err))
	}
	return b, nil
}

// Parse decodes and validates data as if read from the file name. On failure
// the error is a [Problems] listing every problem found. It never panics:
// nesting and alias expansion are bounded before decoding, and a panic left
// in the YAML library becomes a "could not parse" problem.
func Parse(name string, data []byte, opts Options) (*Config, error) {
	return parseSafely(name, func() (*Config, error) { return parse(name, data, opts) })
}

// parseSafely is the safety net for bugs in the YAML library: the known
// crashers get specific problems before they reach it, and FuzzParse fails
// on this message so that new ones are found and fixed the same way.
func parseSafely(name string, parse func() (*Config, error)) (cfg *Config, err error) {
	defer func() {
		if r := recover(); r != nil {
			cfg, err = nil, Problems{{File: name, Msg: fmt.Sprintf("could not parse: %v", r)}}
		}
	}()
	return parse()
}

func parse(name string, data []byte, opts Options) (*Config, error) {
	tokens := lexer.Tokenize(string(data))
	if p := checkTokens(tokens); p != nil {
		p.File = name
		return nil, Problems{*p}
	}
	file, err := parser.Parse(tokens, 0)
	if err != nil {
		return nil, Problems{syntaxProblem(name, err)}
	}
	if len(file.Docs) != 1 || file.Docs[0].Body == nil {
		return nil, Problems{{File: name, Msg: "want exactly one YAML document"}}
	}
	body := file.Docs[0].Body
	aliases, p := checkExpansion(body)
	if p != nil {
		p.File = name
		return nil, Problems{*p}
	}
	w := &walker{file: name, pos: map[string]pos{}, bad: map[string]bool{}, aliases: aliases}
	// The walker replaces each value of the wrong type by null, so that the
	// decoder below sees only well-typed values and every other field is
	// still decoded and validated.
	w.walk(body, reflect.TypeOf(Config{}), "")
	var cfg Config
	if err := yaml.NodeToValue(body, &cfg); err != nil {
		if len(w.problems) > 0 {
			// The walker already named the bad values.
			return nil, w.problems.sorted()
		}
		return nil, Problems{decodeProblem(name, err)}
	}
	// Unknown keys were ignored by this lenient decode; the rules are still
	// checked so that the user sees every problem in one run. A value the
	// walker refused counts as absent, so it gets its default, and the rules
	// say nothing more about it.
	present := func(p string) bool { _, ok := w.pos[p]; return ok && !w.bad[p] }
	// Every default sits in a `default` tag. A key present in the file is
	// never defaulted, even when its value is zero: "fall: 0" is an error
	// to report, not a request for the default. Tags that describe a
	// derived value ("majority of peers") are resolved by derive, after
	// decoding, because they depend on other fields. Type-specific probe
	// fields get their default only on probes of that type: a decoded
	// probe holds only its own type's struct.
	field.ApplyDefaults(reflect.ValueOf(&cfg).Elem(), "", present)
	v := &validator{file: name, pos: w.pos, opts: opts}
	v.config(&cfg)
	all := w.problems
	for _, p := range v.problems {
		if !w.refused(p.Path) && opts.covers(p.Path) {
			all = append(all, p)
		}
	}
	if len(all) > 0 {
		return nil, all.sorted()
	}
	return &cfg, nil
}

type pos struct{ line, col int }

func tokenPos(n ast.Node) pos {
	if n == nil || n.GetToken() == nil {
		return pos{}
	}
	p := n.GetToken().Position
	return pos{p.Line, p.Column}
}

func syntaxProblem(name string, err error) Problem {
	if ye, ok := err.(yaml.Error); ok && ye.GetToken() != nil {
		p := ye.GetToken().Position
		return Problem{File: name, Line: p.Line, Column: p.Column, Msg: "yaml: " + ye.GetMessage()}
	}
	return Problem{File: name, Msg: "yaml: " + err.Error()}
}

func decodeProblem(name string, err error) Problem {
	if ye, ok := err.(yaml.Error); ok && ye.GetToken() != nil {
		p := ye.GetToken().Position
		return Problem{File: name, Line: p.Line, Column: p.Column, Msg: ye.GetMessage()}
	}
	return Problem{File: name, Msg: err.Error()}
}

// walker checks the document's shape against the Go types before decoding:
// every unknown key, every scalar of the wrong type and every inline secret
// becomes a Problem, so the user sees all of them at once. It also records
// the position of every field under its display path for the validator.
type walker struct {
	file     string
	pos      map[string]pos
	problems Problems
	bad      map[string]bool // paths whose value was refused and replaced by null
	aliases  map[*ast.AliasNode]ast.Node
}

// refused reports whether path, or a value it lies inside, was refused.
func (w *walker) refused(path string) bool {
	for p := path; p != ""; {
		if w.bad[p] {
			return true
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return false
		}
		p = p[:i]
	}
	return false
}

// nullFor is the null that replaces a refused value n.
func nullFor(n ast.Node) ast.Node {
	p := token.Position{}
	if n != nil && n.GetToken() != nil && n.GetToken().Position != nil {
		p = *n.GetToken().Position
	}
	return ast.Null(token.New("null", "null", &p))
}

// emptyTag returns the tag of a value written as a bare tag (`peers: !!seq`).
// The decoder crashes on an empty !!seq or !!map (goccy/go-yaml issues 735,
// 909), and no field of ours wants an empty tagged value.
func emptyTag(n ast.Node) *ast.TagNode {
	for {
		switch t := n.(type) {
		case *ast.TagNode:
			if _, null := t.Value.(*ast.NullNode); t.Value == nil || null {
				if v := t.Start.Value; v != "!!null" && v != "!!str" {
					return t
				}
			}
			n = t.Value
		case *ast.AnchorNode:
			n = t.Value
		default:
			return nil
		}
	}
}

func (w *walker) add(n ast.Node, path, msg string) {
	p := tokenPos(n)
	w.problems = append(w.problems, Problem{File: w.file, Line: p.line, Column: p.col, Path: path, Msg: msg})
}

func unwrap(n ast.Node) ast.Node {
	for {
		switch t := n.(type) {
		case *ast.TagNode:
			n = t.Value
		case *ast.AnchorNode:
			n = t.Value
		default:
			return n
		}
	}
}

func mappingValues(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch t := n.(type) {
	case *ast.MappingNode:
		return t.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{t}, true
	}
	return nil, false
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

var durationType = reflect.TypeOf(time.Duration(0))

// walk checks n against t and reports false when n itself has the wrong
// type; the caller then replaces n by null so that the decoder skips it.
// Problems inside n are reported and replaced further down.
func (w *walker) walk(n ast.Node, t reflect.Type, path string) bool {
	if tag := emptyTag(n); tag != nil {
		w.add(tag, path, fmt.Sprintf("tag %s has no value", tag.Start.Value))
		return false
	}
	n = unwrap(n)
	if a, ok := n.(*ast.AliasNode); ok {
		target, ok := w.aliases[a]
		if !ok {
			return true // an unknown anchor: the decoder names it
		}
		// checkExpansion has bounded what following aliases costs.
		return w.walk(target, t, path)
	}
	if _, ok := n.(*ast.NullNode); ok {
		return true // an empty value leaves the default in place
	}
	if path != "" {
		if _, seen := w.pos[path]; !seen {
			w.pos[path] = tokenPos(n)
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		return w.scalar(n, path, func(s string) string {
			if _, err := time.ParseDuration(s); err != nil {
				return fmt.Sprintf("%q is not a duration (use units, e.g. 2s, 1500ms, 1h)", s)
			}
			return ""
		})
	case t.Kind() == reflect.Struct:
		return w.structure(n, t, path)
	case t.Kind() == reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			w.add(n, path, "want a list")
			return false
		}
		labels := field.Labels{}
		for i, item := range seq.Values {
			ip := path + "[" + labels.Next(itemLabel(item), i) + "]"
			if !w.walk(item, t.Elem(), ip) {
				w.bad[ip] = true
				seq.Values[i] = nullFor(item)
			}
		}
	case t.Kind() == reflect.Map:
		values, ok := mappingValues(n)
		if !ok {
			w.add(n, path, "want a mapping")
			return false
		}
		for _, mv := range values {
			kp := joinPath(path, keyString(mv.Key))
			if !w.walk(mv.Value, t.Elem(), kp) {
				w.bad[kp] = true
				mv.Value = nullFor(mv.Value)
			}
		}
	case t.Kind() == reflect.String:
		return w.scalar(n, path, func(string) string { return "" })
	case t.Kind() == reflect.Bool:
		return w.scalar(n, path, func(s string) string {
			if _, err := strconv.ParseBool(s); err != nil {
				return fmt.Sprintf("%q is not true or false", s)
			}
			return ""
		})
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return w.scalar(n, path, func(s string) string {
			if _, err := strconv.ParseInt(s, 10, 64); err != nil {
				return fmt.Sprintf("%q is not a whole number", s)
			}
			return ""
		})
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		return w.scalar(n, path, func(s string) string {
			if _, err := strconv.ParseUint(s, 10, 64); err != nil {
				return fmt.Sprintf("%q is not a non-negative whole number", s)
			}
			return ""
		})
	}
	return true
}

// scalar checks a leaf. The message never quotes the value of a field that
// could hold a secret.
func (w *walker) scalar(n ast.Node, path string, check func(string) string) bool {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode, *ast.SequenceNode:
		w.add(n, path, "want a single value, not a list or mapping")
		return false
	}
	s := scalarText(n)
	if msg := check(s); msg != "" {
		if looksSecretPath(path) {
			msg = "invalid value"
		}
		w.add(n, path, msg)
		return false
	}
	return true
}

// resolve is the node n stands for: an alias's target, without tags and
// anchors.
func (w *walker) resolve(n ast.Node) ast.Node {
	n = unwrap(n)
	if a, ok := n.(*ast.AliasNode); ok {
		if target, ok := w.aliases[a]; ok {
			return unwrap(target)
		}
	}
	return n
}

func scalarText(n ast.Node) string {
	if n.GetToken() == nil {
		return ""
	}
	return n.GetToken().Value
}

func keyString(k ast.MapKeyNode) string {
	if k == nil || k.GetToken() == nil {
		return ""
	}
	return k.GetToken().Value
}

// itemLabel is a list item's name or id, or "" when it has neither.
func itemLabel(item ast.Node) string {
	values, ok := mappingValues(unwrap(item))
	if ok {
		for _, k := range []string{"name", "id"} {
			for _, mv := range values {
				if keyString(mv.Key) == k {
					if s := scalarText(unwrap(mv.Value)); s != "" {
						return s
					}
				}
			}
		}
	}
	return ""
}

func (w *walker) structure(n ast.Node, t reflect.Type, path string) bool {
	values, ok := mappingValues(n)
	if !ok {
		w.add(n, path, "want a mapping")
		return false
	}
	fields := yamlFields(t)
	seen := map[string]bool{}
	kept := values[:0:0]
	for _, mv := range values {
		key := keyString(mv.Key)
		kp := joinPath(path, key)
		if seen[key] {
			w.add(mv.Key, kp, "duplicate key")
			continue // dropped below, so that the decoder does not stop at it
		}
		seen[key] = true
		kept = append(kept, mv)
		f, ok := fields[key]
		if !ok {
			if alt := secretAlternative(key, fields); alt != "" {
				w.add(mv.Key, kp, fmt.Sprintf("secrets are not accepted inline; put it in a file and set %s", alt))
				continue
			}
			w.add(mv.Key, kp, "unknown key"+suggest(key, fields))
			continue
		}
		w.pos[kp] = tokenPos(mv.Key)
		if !w.walk(mv.Value, f.Type, kp) {
			w.bad[kp] = true
			mv.Value = nullFor(mv.Value)
		}
		if IsFileKey(key) && !w.bad[kp] {
			if msg := filePathProblem(scalarText(w.resolve(mv.Value))); msg != "" {
				// Refused like a value of the wrong type, so that no rule
				// reads it further and no message repeats it.
				w.add(mv.Value, kp, msg)
				w.bad[kp] = true
				mv.Value = nullFor(mv.Value)
			}
		}
	}
	if m, ok := n.(*ast.MappingNode); ok {
		m.Values = kept
	}
	return true
}

// yamlFields maps yaml key to struct field, flattening `yaml:",inline"`
// embedded structs as the decoder does.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if isInline(f) {
			for k, v := range yamlFields(structType(f.Type)) {
				if _, dup := out[k]; !dup {
					out[k] = inheritTypes(v, f)
				}
			}
			continue
		}
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		out[name] = f
	}
	return out
}

// inheritTypes gives f the types tag of the inline struct field that holds
// it, when it has none of its own: a section shared with other parts of the
// file (openstackauth.Credentials) is tagged for the probe types where it
// sits, not where it is declared.
func inheritTypes(f, inline reflect.StructField) reflect.StructField {
	if types := inline.Tag.Get("types"); types != "" && f.Tag.Get("types") == "" {
		f.Tag = reflect.StructTag(fmt.Sprintf(`%s types:%q`, f.Tag, types))
	}
	return f
}

// isInline reports a struct field, embedded or named, value or pointer,
// whose fields sit at its parent's level. A key declared by two inline
// structs is the first one's: they carry the same tags.
func isInline(f reflect.StructField) bool {
	return structType(f.Type).Kind() == reflect.Struct && strings.Contains(f.Tag.Get("yaml"), ",inline")
}

// structType is t, or what t points to.
func structType(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// secretKeys are keys that would carry a secret inline.
var secretKeys = []string{"secret", "password", "token", "api_token", "key", "tsig_secret", "api_key",
	"application_credential_secret", "application_credential_id", "secret_access_key", "access_key_id"}

// secretAlternative returns the *_file field to use instead when key is a
// known inline-secret spelling.
func secretAlternative(key string, fields map[string]reflect.StructField) string {
	isSecret := false
	for _, s := range secretKeys {
		if key == s {
			isSecret = true
			break
		}
	}
	if !isSecret {
		return ""
	}
	for _, cand := range []string{key + "_file", key + "_env"} {
		if _, ok := fields[cand]; ok {
			return cand
		}
	}
	var files []string
	for name := range fields {
		if strings.HasSuffix(name, "_file") && strings.Contains(name, key) {
			return name
		}
		if strings.HasSuffix(name, "_file") {
			files = append(files, name)
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return "a *_file field"
	}
	return strings.Join(files, " or ")
}

func looksSecretPath(path string) bool {
	low := strings.ToLower(path)
	for _, s := range []string{"secret", "token", "password", "key"} {
		if strings.Contains(low, s) {
			return true
		}
	}
	return false
}

// IsFileKey reports whether a field of this key holds the path of a file:
// a secret, a credential, a CA bundle or a kubeconfig. Such a value is
// never printed, and the file it names is read only through
// internal/regularfile.
func IsFileKey(key string) bool {
	return strings.HasSuffix(key, "_file") || key == "kubeconfig"
}

// filePathProblem says why s cannot be the path a file field wants, or ""
// when it can. The rule does not guess whether s is a secret: anything but
// an absolute path, free of control characters and surrounding blanks, is
// refused, so a PEM block, a BIND key clause, a passphrase or a relative
// path-like token fails even with --no-file-checks. The message never
// holds s.
func filePathProblem(s string) string {
	switch {
	case s == "":
		return ""
	case looksLikeInlineSecret(s):
		return "this looks like the secret itself, not a path to a file holding it (" + valueNotShown + ")"
	case !filepath.IsAbs(s), strings.TrimSpace(s) != s, strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "want the absolute path of a file (" + valueNotShown + ")"
	}
	return ""
}

// looksLikeInlineSecret guesses whether a *_file value is a pasted secret:
// long, no path separator, and drawn from a base64/hex alphabet.
func looksLikeInlineSecret(s string) bool {
	if len(s) < 20 || strings.ContainsAny(s, "/\\ ") {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '+', r == '=', r == '-', r == '_':
		default:
			return false
		}
	}
	return !strings.Contains(s, ".")
}

func suggest(key string, fields map[string]reflect.StructField) string {
	best, bestD := "", 3
	for name := range fields {
		if d := editDistance(key, name); d < bestD || (d == bestD && best != "" && name < best) {
			best, bestD = name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
