package failover

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CheckText reports why s cannot be recorded as free text (a reason, an
// actor) in the log, or nil. Such text is one line of printable UTF-8: it is
// printed in history tables and terminals, where a control character would
// forge a row or move the cursor. Tab is refused too: it is a column break
// in the CLI's tables. C0 (U+0000-U+001F), DEL and C1 (U+0080-U+009F) are
// refused, and so is invalid UTF-8, which a terminal may read as C1.
// Invisible format characters are refused too (see IsFormat): a
// right-to-left override shows "deliver" as "reviled", and a line
// separator starts a new line in a browser, an editor or a log viewer.
func CheckText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	for i, r := range s {
		if isControl(r) {
			return fmt.Errorf("holds control character %U at byte %d; write one line of printable text", r, i)
		}
		if IsFormat(r) {
			return fmt.Errorf("holds invisible format character %U at byte %d (it can reorder or hide text); write one line of printable text", r, i)
		}
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) }

// IsFormat reports whether r is an invisible character that changes how
// the text around it is shown: the line and paragraph separators U+2028
// and U+2029, and Unicode's format characters (category Cf): the bidi
// embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), the
// directional marks (U+200E, U+200F, U+061C), zero-width spaces and joiners
// (U+200B, U+2060, U+FEFF), tags (U+E0001-U+E007F) and the like. The
// zero-width non-joiner and joiner (U+200C, U+200D) are not among them:
// Persian and the Indic scripts need them to spell words, emoji sequences
// are built with them, and neither moves nor hides any other character.
func IsFormat(r rune) bool {
	switch r {
	case 0x200c, 0x200d:
		return false
	case 0x2028, 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// EscapeText returns s with every character CheckText refuses written as a
// visible Go escape (\n, \x1b, \u0085, \u202e) and every invalid byte as
// \xff, so text from entries older than the rule prints as one inert line
// that reads in the order it was written.
func EscapeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case isControl(r) || IsFormat(r):
			writeEscaped(&b, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// EscapeFormat returns s with every character IsFormat reports written as
// a visible escape (\u202e), and nothing else changed. It is for text that
// is already a document, such as a rendered HTML page, whose line breaks
// and markup must stay what they are.
func EscapeFormat(s string) string {
	if !strings.ContainsFunc(s, IsFormat) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		// An invalid byte decodes as U+FFFD, which is no format character:
		// it is copied as it was.
		r, size := utf8.DecodeRuneInString(s[i:])
		if IsFormat(r) {
			writeEscaped(&b, r)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// writeEscaped writes r as Go writes it in a quoted rune, quotes left out.
func writeEscaped(b *strings.Builder, r rune) {
	q := strconv.QuoteRune(r)
	b.WriteString(q[1 : len(q)-1])
}

// checkText holds the free text of a person's command to CheckText. It runs
// when a command is proposed (Encode), not when it is applied, so entries
// written before the rule still replay.
func (c *Command) checkText() error {
	reason, actor := c.Payload.text()
	for _, f := range []struct{ name, v string }{{"reason", reason}, {"actor", actor}} {
		if err := CheckText(f.v); err != nil {
			return fmt.Errorf("%s %s: %w: %w", c.Type(), f.name, err, ErrBadCommand)
		}
	}
	return nil
}
