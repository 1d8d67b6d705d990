package config

import (
	"cmp"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/all"
)

// WriteReference writes the configuration reference in Markdown: every
// field, its type, its default and what it means, from the struct tags that
// also drive decoding and defaults. docs/configuration.md is this output.
func WriteReference(w io.Writer) error {
	var b strings.Builder
	b.WriteString(referenceHeader)
	fmt.Fprintf(&b, referenceLimits, MaxFileSize>>20, MaxDepth, MaxValues)
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := yamlName(f)
		fmt.Fprintf(&b, "\n## `%s`\n\n%s\n\n", name, f.Tag.Get("doc"))
		b.WriteString("| field | type | default | meaning |\n|---|---|---|---|\n")
		writeFields(&b, f.Type, name)
		if name == remediate.Section {
			writeRepairs(&b)
		}
	}
	b.WriteString(referenceRules)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeRepairs lists every repair of the registry (executor/remediate/all):
// its name, as records and `drwatch remediate plan NAME` call it, its
// section and the clients it is built with.
func writeRepairs(b *strings.Builder) {
	b.WriteString("\nThe repairs, as `drwatch remediate plan NAME` and the records name them:\n\n")
	b.WriteString("| repair | section | clients |\n|---|---|---|\n")
	for _, r := range all.Repairs {
		fmt.Fprintf(b, "| %s | `%s.%s` | %s |\n", r.Name, remediate.Section, r.Section, all.Clients(r))
	}
}

func yamlName(f reflect.StructField) string { return strings.Split(f.Tag.Get("yaml"), ",")[0] }

func writeFields(b *strings.Builder, t reflect.Type, path string) {
	writeFieldsOnce(b, t, path, "", map[string]bool{})
}

// writeFieldsOnce writes each path once: a key that several inline structs
// declare (a probe's ca_file) is one field of the file. A field without a
// types tag takes its inline holder's (types).
func writeFieldsOnce(b *strings.Builder, t reflect.Type, path, types string, seen map[string]bool) {
	// A list of mappings is written path[].field; an optional mapping (a
	// pointer) is written path.field, as it appears in the file.
	list := false
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		list = list || t.Kind() == reflect.Slice
		t = t.Elem()
	}
	if list && t.Kind() == reflect.Struct && !strings.HasSuffix(path, "[]") {
		path += "[]"
	}
	if t.Kind() != reflect.Struct || t == durationType {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if isInline(f) {
			if ref := f.Tag.Get("docref"); ref != "" {
				writeRefs(b, structType(f.Type), path, ref, seen)
				continue
			}
			writeFieldsOnce(b, f.Type, path, cmp.Or(f.Tag.Get("types"), types), seen)
			continue
		}
		name := yamlName(f)
		if name == "" || name == "-" {
			continue
		}
		fp := path + "." + name
		if seen[fp] {
			continue
		}
		seen[fp] = true
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ref := f.Tag.Get("docref"); ref != "" {
			writeRef(b, fp, f, ref)
			continue
		}
		if ft.Kind() == reflect.Struct && ft != durationType || (ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct) {
			fmt.Fprintf(b, "| `%s` | %s | | %s |\n", fp, typeName(f.Type), f.Tag.Get("doc"))
			writeFields(b, f.Type, fp)
			continue
		}
		def := f.Tag.Get("default")
		if def != "" {
			def = "`" + def + "`"
		}
		doc := f.Tag.Get("doc")
		if types := cmp.Or(f.Tag.Get("types"), types); types != "" {
			doc = strings.TrimPrefix(doc, types+": ")
			doc = "(" + strings.ReplaceAll(types, ",", ", ") + ") " + doc
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", fp, typeName(f.Type), def, strings.ReplaceAll(doc, "|", "\\|"))
	}
}

// writeRef writes the field f at fp, the same section as ref written out
// elsewhere: its fields are those, under fp. The link goes to ref's
// top-level section, the heading the reference has.
func writeRef(b *strings.Builder, fp string, f reflect.StructField, ref string) {
	def := " "
	if d := f.Tag.Get("default"); d != "" {
		def = " `" + d + "` "
	}
	top, _, _ := strings.Cut(ref, ".")
	fmt.Fprintf(b, "| `%s` | %s |%s| %s Its fields are those of [`%s`](#%s). |\n", fp, typeName(f.Type), def, f.Tag.Get("doc"), ref, top)
}

// writeRefs writes each field of the inline struct t at path as the
// same field of ref (writeRef): sections shared with ref, written once.
func writeRefs(b *strings.Builder, t reflect.Type, path, ref string, seen map[string]bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := yamlName(f)
		if name == "" || name == "-" || seen[path+"."+name] {
			continue
		}
		seen[path+"."+name] = true
		writeRef(b, path+"."+name, f, ref+"."+name)
	}
}

func typeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.Pointer:
		return typeName(t.Elem())
	case t.Kind() == reflect.Slice:
		return "list of " + typeName(t.Elem())
	case t.Kind() == reflect.Map:
		return "map of " + typeName(t.Elem())
	case t.Kind() == reflect.Struct:
		return "mapping"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "number"
	}
	return t.Kind().String()
}

const referenceHeader = `# Configuration reference

<!-- Generated by 'drwatch config docs' from cmd/drwatch/config/types.go and the section types it embeds. Do not edit by hand:
     a test fails when this file and the code disagree. -->

One YAML file per watcher node. Check it with
` + "`drwatch config validate --config FILE`" + `: every problem is printed at once as
` + "`FILE:LINE:COL: field.path: message`" + `, and the command exits 1. List items are named in
paths by their ` + "`name`" + ` or ` + "`id`" + ` (` + "`sites.primary.probes[lms].timeout`" + `).

Decoding is strict: an unknown key is an error. Durations take units (` + "`2s`, `1500ms`, `1h`" + `).
A key written in the file is never defaulted, even when its value is zero, except in
` + "`remediations`" + ` and ` + "`cluster_health`" + `, where zero means unset and gets the default too.

**Secrets are never written inline.** A field ending in ` + "`_file`" + ` names a file holding the
secret; ` + "`_env`" + ` names an environment variable. A key such as ` + "`secret:`" + ` or ` + "`token:`" + `,
or a ` + "`_file`" + ` value that looks like a pasted secret, is an error. No error message ever
quotes a secret, nor the value of a ` + "`_file`" + ` or ` + "`_env`" + ` field, which may be a secret pasted
where the path belongs: ` + "`api.tokens_file: no such file (value not shown: it may be a secret)`" + `.

**File fields take absolute paths to regular files.** A file field (one ending in ` + "`_file`" + `, and a
kubernetes probe's ` + "`kubeconfig`" + `) must be an absolute path, with no control character and no
blank around it, even with ` + "`--no-file-checks`" + `: anything else (a PEM block, a BIND ` + "`key`" + ` clause,
a passphrase, a relative path-like token) is refused as a likely pasted secret. Without
` + "`--no-file-checks`" + `, each file must be a regular file after symbolic links (not a device such as
` + "`/dev/zero`" + `, a FIFO, a socket, a directory, or a file of ` + "`/proc`" + ` or ` + "`/sys`" + `) of at most 1 MiB;
` + "`serve`" + ` and every command read these files the same way, and refuse the same files.
`

// referenceLimits takes MaxFileSize in MiB, MaxDepth and MaxValues.
const referenceLimits = `
**Limits.** The file may be at most %d MiB. Collections may nest at most %d levels. Anchors,
aliases and merge keys (` + "`<<`" + `) are allowed, but once every alias and merge key is expanded
the document may hold at most %d values, and an alias may not sit inside its own anchor.
A file over a limit gets one problem with its line and column and is refused before it is
decoded, so a hostile file costs little time and memory. A bare ` + "`!!seq`" + ` or ` + "`!!map`" + ` tag
with no value (` + "`peers: !!seq`" + `) is an error: write ` + "`[]`" + ` or ` + "`{}`" + `.
`

const referenceRules = `
## Rules checked across fields

- ` + "`node.id`" + ` must appear in ` + "`peers`" + `; peer ids and Raft addresses are unique; use an odd number of peers.
- ` + "`policy.quorum`" + ` must be a majority of the peers: more than half, at most all.
- ` + "`policy.timeout`" + ` and every probe's ` + "`timeout`" + ` must be below ` + "`policy.interval`" + `.
- ` + "`policy.fall`" + ` and ` + "`policy.rise`" + ` must be ≥ 1; ` + "`policy.stale_after`" + ` must exceed ` + "`policy.interval`" + `.
- ` + "`policy.failback: auto`" + ` needs ` + "`policy.failback_after`" + ` > 0; with ` + "`manual`" + ` it must be unset.
- Each site has at least one probe and at least one critical probe; probe names are unique within a site.
- A probe sets only the fields of its own type.
- Every DNS record lies in ` + "`dns.zone`" + `, is unique by name and type, and has values for both sites;
  A values are IPv4, AAAA values IPv6, a CNAME has one fully qualified target.
- Groups: each name is unique, not ` + "`default`" + `, and fits a DNS label; each group has its own records
  (at least one, none another group's or the default group's), its own fence record in its zone, and
  sites checked as the top-level ones. A probe named on one site by several groups must be the same
  definition (only ` + "`critical`" + ` may differ). With groups and no ` + "`dns.records`" + ` there is no default
  group, and ` + "`sites`" + `, ` + "`policy.failback_gate`" + ` and ` + "`hooks`" + ` must be empty (a group's own
  hooks go in ` + "`groups[].hooks`" + `).
- Exactly the selected provider's section is set, and its credentials come from a file or the environment.
- Every ` + "`*_file`" + ` exists and is a file (skip with ` + "`drwatch config validate --no-file-checks`" + ` when
  validating on another machine).
`
