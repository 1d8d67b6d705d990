// Package field is the error every configuration section's Validate
// returns: a problem with one field, named by its path relative to the
// section. The package that owns a section checks it; the config loader
// that composes the sections prefixes each path with the section's own
// (Under) and adds the file position.
//
// It imports only the standard library and is pure, so that every package,
// the stdlib-only decision core included, may return its errors. It must
// never import anything more: test/importrules holds it to that.
package field
