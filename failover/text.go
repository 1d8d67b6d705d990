package failover

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// CheckText reports why s cannot be recorded as free text (a reason, an
// actor) in the log, or nil. Such text is one line of printable UTF-8: it is
// printed in history tables and terminals, where a control character would
// forge a row or move the cursor. Tab is refused too: it is a column break
// in the CLI's tables. C0 (U+0000-U+001F), DEL and C1 (U+0080-U+009F) are
// refused, and so is invalid UTF-8, which a terminal may read as C1.
func CheckText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	for i, r := range s {
		if isControl(r) {
			return fmt.Errorf("holds control character %U at byte %d; write one line of printable text", r, i)
		}
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) }

// EscapeText returns s with every character CheckText refuses written as a
// visible Go escape (\n, \x1b, \u0085) and every invalid byte as \xff, so
// text from entries older than the rule prints as one inert line.
func EscapeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case isControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
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
