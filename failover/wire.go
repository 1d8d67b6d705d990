package failover

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
)

// The wire format of a command is version 1's, byte for byte:
//
//	{"v":1,"type":"tick","tick":{"at":5}}
//
// Version 1 held each payload in a pointer field of one union struct, with
// At inside every payload, and let encoding/json read and write it. The
// format's fine print comes from that: keys match case-insensitively, null
// means absent, a repeated payload key merges into one payload, and a
// payload's members are its fields in order, with at first (in Observe,
// after node). Replicas of both versions share one log during a rolling
// upgrade and replay logs the other wrote, so the fine print must hold
// too. wireFormat therefore rebuilds version 1's two struct shapes by
// reflection from payloadTypes, once, and hands them to encoding/json as
// version 1 did.

// wireAt stands, as a blank field of a payload type, where version 1 wrote
// the command's At when it was not the payload's first member.
type wireAt struct{}

// wireOmitter is a payload type with fields that some of its values leave
// out of their encoding: a field tagged wire:"omitempty" is omitted when
// empty from the values whose wireOmitEmpty is true. Every other value
// still writes it, so the encodings that existed before the field could be
// left out stay version 1's byte for byte. Left out and written empty then
// differ: a binary from before wrote the field always, so an entry that
// writes it, empty or null, where wireOmitEmpty would leave it out, means
// what it meant to that binary, and unmarshal returns wireWritten of the
// value instead.
type wireOmitter interface {
	wireOmitEmpty() bool
	wireWritten() Payload
}

// wirePayload is one payload type and its version 1 shape.
type wirePayload struct {
	typ  reflect.Type // the payload type, a struct
	wire reflect.Type // its fields with At among them, as version 1 had them
	// omit is wire with omitempty on the fields tagged wire:"omitempty",
	// for the values whose wireOmitEmpty is true; nil when none is tagged.
	// omitEnvelope is the envelope for them: V, Type and omit alone, which
	// encodes as the whole envelope does with only this payload set.
	omit, omitEnvelope reflect.Type
	// written is an envelope with the payload's tagged fields alone, as
	// raw JSON: which of them an entry writes.
	written reflect.Type
	at      int // index of At in wire
	// fields pairs each field index of typ with its index in wire.
	fields [][2]int
	// field is the index of the payload's pointer in the envelope.
	field int
}

// wireFormat is version 1's union struct, rebuilt from the payload types.
type wireFormat struct {
	envelope reflect.Type // struct{V; Type; one *wire per payload type}
	payloads []*wirePayload
	byType   map[CommandType]*wirePayload
	byGo     map[reflect.Type]*wirePayload // by payload type and by wire type
}

var wire = newWireFormat(payloadTypes)

// Envelope fields before the payloads.
const (
	wireV = iota
	wireType
)

func newWireFormat(types []Payload) *wireFormat {
	f := &wireFormat{byType: map[CommandType]*wirePayload{}, byGo: map[reflect.Type]*wirePayload{}}
	fields := []reflect.StructField{
		wireV:    {Name: "V", Type: reflect.TypeFor[int](), Tag: `json:"v"`},
		wireType: {Name: "Type", Type: reflect.TypeFor[CommandType](), Tag: `json:"type"`},
	}
	for _, p := range types {
		wp := newWirePayload(p)
		if f.byType[p.CommandType()] != nil {
			panic(fmt.Sprintf("failover: two payload types for command type %q", p.CommandType()))
		}
		wp.field = len(fields)
		field := reflect.StructField{
			Name: wp.typ.Name(),
			Type: reflect.PointerTo(wp.wire),
			Tag:  reflect.StructTag(`json:"` + string(p.CommandType()) + `,omitempty"`),
		}
		fields = append(fields, field)
		if wp.omit != nil {
			field.Type = reflect.PointerTo(wp.omit)
			wp.omitEnvelope = reflect.StructOf([]reflect.StructField{fields[wireV], fields[wireType], field})
			field.Type = reflect.PointerTo(wp.written)
			wp.written = reflect.StructOf([]reflect.StructField{field})
		}
		f.payloads = append(f.payloads, wp)
		f.byType[p.CommandType()] = wp
		f.byGo[wp.typ], f.byGo[wp.wire] = wp, wp
	}
	f.envelope = reflect.StructOf(fields)
	return f
}

func newWirePayload(p Payload) *wirePayload {
	t := reflect.TypeOf(p)
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("failover: payload type %s is not a struct", t))
	}
	at := reflect.StructField{Name: "At", Type: reflect.TypeFor[int64](), Tag: `json:"at"`}
	wp := &wirePayload{typ: t, at: -1}
	var fields []reflect.StructField
	for i := range t.NumField() {
		sf := t.Field(i)
		switch {
		case sf.Type == reflect.TypeFor[wireAt]():
			wp.at = len(fields)
			fields = append(fields, at)
		case !sf.IsExported() || sf.Anonymous:
			// Version 1 had neither; reflection could not copy them.
			panic(fmt.Sprintf("failover: payload %s: field %s is unexported or embedded", t, sf.Name))
		default:
			wp.fields = append(wp.fields, [2]int{i, len(fields)})
			fields = append(fields, reflect.StructField{Name: sf.Name, Type: sf.Type, Tag: sf.Tag})
		}
	}
	if wp.at < 0 {
		wp.at = 0
		fields = append([]reflect.StructField{at}, fields...)
		for i := range wp.fields {
			wp.fields[i][1]++
		}
	}
	wp.wire = reflect.StructOf(fields) // panics on a payload field named At
	omit := slices.Clone(fields)
	var written []reflect.StructField
	for _, ix := range wp.fields {
		sf := t.Field(ix[0])
		if sf.Tag.Get("wire") != "omitempty" {
			continue
		}
		if _, ok := p.(wireOmitter); !ok || strings.Contains(sf.Tag.Get("json"), ",") {
			panic(fmt.Sprintf("failover: payload %s: field %s tagged wire:\"omitempty\" needs wireOmitEmpty and a json tag without options", t, sf.Name))
		}
		omit[ix[1]].Tag = reflect.StructTag(`json:"` + sf.Tag.Get("json") + `,omitempty"`)
		written = append(written, reflect.StructField{Name: sf.Name, Type: reflect.TypeFor[json.RawMessage](), Tag: reflect.StructTag(`json:"` + sf.Tag.Get("json") + `"`)})
	}
	if len(written) > 0 {
		wp.omit = reflect.StructOf(omit)
		wp.written = reflect.StructOf(written)
	}
	return wp
}

// payload returns the wire shape of p's type, nil when p is not a value of
// one of the payload types.
func (f *wireFormat) payload(p Payload) *wirePayload {
	wp := f.byGo[reflect.TypeOf(p)]
	if wp == nil || wp.typ != reflect.TypeOf(p) {
		return nil
	}
	return wp
}

// marshal writes c, which has passed check, as version 1 did.
func (f *wireFormat) marshal(c Command) ([]byte, error) {
	wp := f.payload(c.Payload)
	env := reflect.New(f.envelope).Elem()
	wt, field := wp.wire, wp.field
	if o, ok := c.Payload.(wireOmitter); ok && wp.omit != nil && o.wireOmitEmpty() {
		env = reflect.New(wp.omitEnvelope).Elem()
		wt, field = wp.omit, wireType+1
	}
	env.Field(wireV).SetInt(Version)
	env.Field(wireType).SetString(string(c.Type()))
	w := reflect.New(wt)
	p := reflect.ValueOf(c.Payload)
	for _, ix := range wp.fields {
		w.Elem().Field(ix[1]).Set(p.Field(ix[0]))
	}
	w.Elem().Field(wp.at).SetInt(c.At)
	env.Field(field).Set(w)
	return json.Marshal(env.Interface())
}

// unmarshal reads one command strictly, as version 1 did, with its errors.
func (f *wireFormat) unmarshal(b []byte) (Command, error) {
	env := reflect.New(f.envelope)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(env.Interface()); err != nil {
		return Command{}, fmt.Errorf("%w: %w", ErrBadCommand, f.named(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Command{}, fmt.Errorf("trailing data after the command: %w", ErrBadCommand)
	}
	e := env.Elem()
	v, t := e.Field(wireV).Int(), CommandType(e.Field(wireType).String())
	n := 0
	for _, wp := range f.payloads {
		if !e.Field(wp.field).IsNil() {
			n++
		}
	}
	wp := f.byType[t]
	switch {
	case v != Version:
		return Command{}, fmt.Errorf("command version %d, want %d: %w", v, Version, ErrBadCommand)
	case wp == nil:
		return Command{}, fmt.Errorf("unknown command type %q: %w", t, ErrBadCommand)
	case e.Field(wp.field).IsNil():
		return Command{}, fmt.Errorf("command %s without its payload: %w", t, ErrBadCommand)
	case n != 1:
		return Command{}, fmt.Errorf("command %s with %d payloads, want 1: %w", t, n, ErrBadCommand)
	}
	w := e.Field(wp.field).Elem()
	p := reflect.New(wp.typ).Elem()
	for _, ix := range wp.fields {
		p.Field(ix[0]).Set(w.Field(ix[1]))
	}
	pl := p.Interface().(Payload)
	if o, ok := pl.(wireOmitter); ok && wp.omit != nil && o.wireOmitEmpty() && wp.writes(b) {
		pl = o.wireWritten()
	}
	return Command{At: w.Field(wp.at).Int(), Payload: pl}, nil
}

// writes reports whether the command b, which unmarshal read, writes any
// of the payload's fields tagged wire:"omitempty", null included. Keys
// match and repeated payload keys merge as in unmarshal.
func (wp *wirePayload) writes(b []byte) bool {
	env := reflect.New(wp.written)
	if err := json.Unmarshal(b, env.Interface()); err != nil || env.Elem().Field(0).IsNil() {
		return false
	}
	w := env.Elem().Field(0).Elem()
	for i := range w.NumField() {
		if w.Field(i).Len() > 0 {
			return true
		}
	}
	return false
}

// named gives a type error from encoding/json the type names version 1's
// error had: the reflected structs have none, and version 1 said
// "failover.Command", "Command.v" or "Tick.tick.at".
func (f *wireFormat) named(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	n := *te
	switch wp := f.byGo[n.Type]; {
	case n.Type == f.envelope:
		n.Type = reflect.TypeFor[Command]()
	case wp != nil:
		n.Type = wp.typ
	}
	if n.Struct == "" && n.Field != "" {
		key, _, nested := strings.Cut(n.Field, ".")
		n.Struct = "Command"
		if wp := f.byType[CommandType(key)]; nested && wp != nil {
			n.Struct = wp.typ.Name()
		}
	}
	return &n
}
