package probes

import (
	"slices"
	"strings"

	"github.com/drwatch/drwatch/internal/field"
)

// probeTypes is the table of probe types, one line each, as
// blackbox_exporter's prober map is: the name the configuration file gives
// the type (Spec.Type, also the metric label), its prober, and its section
// of Spec. Everything that differs by type asks this table: decoding,
// the file's rules, the scheduler's check, the files a probe reads, and
// Probers. A new type is its own file (its section type and prober), its
// field in Spec, one line here and the regenerated reference.
var probeTypes = []probeType{
	{"http", ProbeHTTP, sectionAt(func(s *Spec) **HTTPSpec { return &s.HTTP }), true},
	{"tcp", ProbeTCP, sectionAt(func(s *Spec) **TCPSpec { return &s.TCP }), true},
	{"kubernetes", ProbeKubernetes, sectionAt(func(s *Spec) **KubernetesSpec { return &s.Kubernetes }), false},
	{"octavia", ProbeOctavia, sectionAt(func(s *Spec) **OctaviaSpec { return &s.Octavia }), false},
}

// probeType is one line of probeTypes.
type probeType struct {
	name  string
	probe ProbeFunc
	// section is the type's field of Spec.
	section section
	// checkedAtStart makes NewScheduler refuse a probe of the type whose
	// section is missing or fails its Validate. Without it the prober
	// itself reports such a spec, as a ClassConfig result on every run.
	checkedAtStart bool
}

// settings is what a type's section of Spec (HTTPSpec, ...) answers.
type settings interface {
	// Validate is the prober's rules, paths relative to the probe.
	Validate() field.Errors
	// configured is the configuration file's rules, which add to the
	// prober's (see Spec.Validate).
	configured() field.Errors
	// files lists the files the prober reads, by field (Spec.Files).
	files() []field.File
}

// section is a probe type's handle on its field of Spec.
type section struct {
	get   func(s *Spec) settings // nil when the field is
	zero  func() settings
	clear func(s *Spec)
}

// sectionAt makes the section whose field at returns, typed once.
func sectionAt[T any, P interface {
	*T
	settings
}](at func(*Spec) **T) section {
	return section{
		get: func(s *Spec) settings {
			if p := *at(s); p != nil {
				return P(p)
			}
			return nil
		},
		zero:  func() settings { return P(new(T)) },
		clear: func(s *Spec) { *at(s) = nil },
	}
}

// orZero is s's section, or a zero one when it is missing.
func (c section) orZero(s *Spec) settings {
	if v := c.get(s); v != nil {
		return v
	}
	return c.zero()
}

// typeNamed is the line of probeTypes for name.
func typeNamed(name string) (probeType, bool) {
	i := slices.IndexFunc(probeTypes, func(t probeType) bool { return t.name == name })
	if i < 0 {
		return probeType{}, false
	}
	return probeTypes[i], true
}

// KnownType reports whether t is a type a configured probe may have.
func KnownType(t string) bool {
	_, ok := typeNamed(t)
	return ok
}

// typeNames lists the types as a sentence: "http, tcp, kubernetes or octavia".
func typeNames() string {
	names := make([]string, len(probeTypes))
	for i, t := range probeTypes {
		names[i] = t.name
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// proberMap is Probers, from the table.
func proberMap() map[string]ProbeFunc {
	m := make(map[string]ProbeFunc, len(probeTypes))
	for _, t := range probeTypes {
		m[t.name] = t.probe
	}
	return m
}

// Files lists the files the probe's prober reads, each with its field's
// path relative to the probe, for the configuration loader to check they
// exist: only those of the probe's own type, and of the shape its settings
// choose (a kubeconfig, or a server's own files). Whether they are required
// is Validate's rule.
func (s *Spec) Files() []field.File {
	t, ok := typeNamed(s.Type)
	if !ok {
		return nil
	}
	if v := t.section.get(s); v != nil {
		return v.files()
	}
	return nil
}

// Probers maps a probe type name to its function: probeTypes' probers. A
// caller adds its own types to a copy (SchedulerOptions.Probers).
var Probers = proberMap()
