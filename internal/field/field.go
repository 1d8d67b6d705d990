package field

import (
	"fmt"
	"strconv"
	"strings"
)

// Error is one problem with one field. Path is relative to the section
// that reported it ("url", "records[lms].ttl"); empty means the section
// itself.
type Error struct {
	Path string
	Msg  string
}

func (e Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Errors is every problem a Validate found, in the order found. A nil or
// empty Errors is no problem: return it through Err to get a nil error.
type Errors []Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Add records a problem with path.
func (es *Errors) Add(path, format string, args ...any) {
	*es = append(*es, Error{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Append adds every problem of more, each under prefix (see Under).
func (es *Errors) Append(prefix string, more Errors) {
	*es = append(*es, more.Under(prefix)...)
}

// Err returns es as an error, or nil when there is no problem.
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// Under returns es with prefix joined in front of every path (Join).
func (es Errors) Under(prefix string) Errors {
	if prefix == "" || len(es) == 0 {
		return es
	}
	out := make(Errors, len(es))
	for i, e := range es {
		out[i] = Error{Path: Join(prefix, e.Path), Msg: e.Msg}
	}
	return out
}

// Join joins a section's path and a path inside it: "a" and "b" give
// "a.b", "a" and "[2].b" give "a[2].b", and either may be empty.
func Join(prefix, path string) string {
	switch {
	case prefix == "":
		return path
	case path == "":
		return prefix
	case strings.HasPrefix(path, "["):
		return prefix + path
	}
	return prefix + "." + path
}

// Labels names the items of one list the way the config loader does, so
// that a path a Validate reports finds the item's position in the file: an
// item's name when it has one (so a message still points at the right item
// after the list is reordered), with "#2", "#3" for repeated names, and its
// index otherwise. Use one Labels per list, in list order.
type Labels map[string]int

// Next labels the item at index i named name ("" when it has no name).
func (l Labels) Next(name string, i int) string {
	if name == "" {
		return strconv.Itoa(i)
	}
	l[name]++
	if n := l[name]; n > 1 {
		return name + "#" + strconv.Itoa(n)
	}
	return name
}

// From returns the field errors err carries: an Errors or Error, itself or
// joined by errors.Join, keeps its paths; any other error, a wrapped one
// included (its wrapper's words would be lost), becomes one Error without
// a path. A nil err gives nil.
func From(err error) Errors {
	if err == nil {
		return nil
	}
	switch e := err.(type) {
	case Errors:
		return e
	case Error:
		return Errors{e}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out Errors
		for _, x := range j.Unwrap() {
			out = append(out, From(x)...)
		}
		return out
	}
	return Errors{{Msg: err.Error()}}
}

// File is a file a configuration field names, for a caller that checks it
// exists before anything reads it: the field's path (relative to the
// section, as in Error) and the file's path.
type File struct{ Field, Path string }
