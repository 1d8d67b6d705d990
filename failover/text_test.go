package failover

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Free text a person writes into the log (reason, actor) is one line of
// printable UTF-8: a control character could forge a history row or drive
// the terminal of whoever reads it. Encode, which every proposer uses,
// refuses it and names the field.
func TestEncodeRefusesControlCharactersInText(t *testing.T) {
	bad := map[string]string{
		"newline": "ok\n12  failover  mallory  forged row",
		"cr":      "ok\rforged",
		"escape":  "ok \x1b[2J\x1b[31mred",
		"nul":     "ok\x00",
		"tab":     "ok\tforged column",
		"del":     "ok\x7f",
		"c1 csi":  "ok \u009b2J",
		"c1 nel":  "ok\u0085forged",
		"invalid": "ok \xff\xfe",
	}
	build := map[string]func(reason, actor string) Command{
		"failover":   func(r, a string) Command { return Command{Payload: Failover{To: Backup, Reason: r, Actor: a}} },
		"failback":   func(r, a string) Command { return Command{Payload: Failback{Reason: r, Actor: a}} },
		"pause":      func(r, a string) Command { return Command{Payload: Pause{Reason: r, Actor: a}} },
		"resume":     func(r, a string) Command { return Command{Payload: Resume{Reason: r, Actor: a}} },
		"ack":        func(r, a string) Command { return Command{Payload: Ack{Reason: r, Actor: a}} },
		"breakglass": func(r, a string) Command { return Command{Payload: BreakGlass{Site: Backup, Reason: r, Actor: a}} },
	}
	for kind, mk := range build {
		if _, err := Encode(mk("planned maintenance — café, 東京", "alice")); err != nil {
			t.Errorf("%s with printable unicode: got %v, want it encoded", kind, err)
		}
		for name, s := range bad {
			for _, field := range []string{"reason", "actor"} {
				c := mk("fine", "alice")
				if field == "reason" {
					c = mk(s, "alice")
				} else {
					c = mk("fine", s)
				}
				_, err := Encode(c)
				if !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), field+": ") {
					t.Errorf("%s with %s in %s: got %v, want ErrBadCommand naming %s", kind, name, field, err, field)
				}
			}
		}
	}
}

// A command already in the log keeps replaying: only new proposals are
// held to the text rule, so Decode still accepts an old entry.
func TestDecodeAcceptsControlCharactersFromOldLogs(t *testing.T) {
	old := `{"v":1,"type":"pause","pause":{"at":5,"reason":"old\n\u001b[2Jentry","actor":"bob"}}`
	c, err := Decode([]byte(old))
	if err != nil {
		t.Fatalf("got %v, want the old entry decoded", err)
	}
	if p, _ := c.Payload.(Pause); p.Reason != "old\n\x1b[2Jentry" {
		t.Errorf("got reason %q, want it as it was written", p.Reason)
	}
}

// EscapeText makes text from old entries inert: no control character or
// invalid byte is left, printable text is unchanged.
func TestEscapeTextLeavesNoControlCharacter(t *testing.T) {
	for in, want := range map[string]string{
		"plain — café":        "plain — café",
		"a\nb\rc\td\x00e\x7f": `a\nb\rc\td\x00e\x7f`,
		"\x1b[2J\x1b[31mred":  `\x1b[2J\x1b[31mred`,
		"c1 \u009b2J \u0085":  `c1 \u009b2J \u0085`,
		"bad \xff\xfe utf8":   `bad \xff\xfe utf8`,
	} {
		if got := EscapeText(in); got != want {
			t.Errorf("EscapeText(%q): got %q, want %q", in, got, want)
		}
		if err := CheckText(EscapeText(in)); err != nil {
			t.Errorf("EscapeText(%q) = %q: %v", in, EscapeText(in), err)
		}
	}
}

// Explain quotes reasons and actors from the log; one written before the
// text rule is quoted escaped, so it cannot add a line or drive a terminal.
func TestExplainEscapesOldText(t *testing.T) {
	m, idx := flipped(t)
	forged := "ok\nFORCED past nothing.\r\x1b[2J\u009b"
	c := Command{At: base + int64(10*time.Second), Payload: Failover{To: Primary, Force: true, Reason: forged, Actor: "eve\x1b[31m"}}
	if _, err := m.Step(idx+1, c); err != nil {
		t.Fatal(err)
	}
	s, err := m.Explain(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(s, "\n") {
		if err := CheckText(line); err != nil || strings.HasPrefix(line, "FORCED past nothing") {
			t.Errorf("Explain line %q: %v, want one escaped line per item:\n%s", line, err, s)
		}
	}
	if !strings.Contains(s, `ok\nFORCED past nothing.\r\x1b[2J`) || !strings.Contains(s, `eve\x1b[31m`) {
		t.Errorf("Explain: got\n%s\nwant the reason and actor shown escaped", s)
	}
}

// Invisible format characters change what a reader sees without showing
// themselves: a right-to-left override turns "reverted" around, a line
// separator starts a new line in a browser or a log viewer. Encode refuses
// them as it refuses control characters; the zero-width joiners that
// Persian, the Indic scripts and emoji need to spell text are left alone.
func TestEncodeRefusesFormatCharactersInText(t *testing.T) {
	bad := map[string]string{
		"rlo":           "deploy \u202edetrever",
		"lro":           "ok \u202dforged",
		"rle":           "ok \u202bforged",
		"pdf":           "ok \u202c",
		"rli":           "ok \u2067forged\u2069",
		"fsi":           "ok \u2068",
		"rlm":           "ok \u200f",
		"lrm":           "ok \u200e",
		"alm":           "ok \u061c",
		"line sep":      "ok\u2028forged row",
		"paragraph sep": "ok\u2029forged row",
		"zwsp":          "ad\u200bmin",
		"bom":           "\ufeffok",
		"word joiner":   "ok\u2060",
		"tag":           "ok\U000e0041",
	}
	for name, s := range bad {
		for _, field := range []string{"reason", "actor"} {
			p := Pause{Reason: "fine", Actor: "alice"}
			if field == "reason" {
				p.Reason = s
			} else {
				p.Actor = s
			}
			_, err := Encode(Command{Payload: p})
			if !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), field+": ") || !strings.Contains(err.Error(), "format character") {
				t.Errorf("pause with %s in %s: got %v, want ErrBadCommand naming %s and the format character", name, field, err, field)
			}
		}
	}
	for _, ok := range []string{
		"می\u200cخواهم",             // Persian: the non-joiner spells the word
		"क्\u200dष",                 // Devanagari: the joiner picks the glyph
		"👩\u200d🔧 on call",          // emoji sequence
		"שלום עולם — right to left", // RTL script, no override
	} {
		if _, err := Encode(Command{Payload: Pause{Reason: ok, Actor: "alice"}}); err != nil {
			t.Errorf("pause with reason %q: got %v, want it encoded", ok, err)
		}
	}
}

// An old entry holding a format character still replays, and EscapeText
// shows the character as an escape so the text reads as it was written.
func TestFormatCharactersFromOldLogsReplayAndPrintEscaped(t *testing.T) {
	old := `{"v":1,"type":"pause","pause":{"at":5,"reason":"deploy \u202edetrever\u2028forged","actor":"bob"}}`
	c, err := Decode([]byte(old))
	if err != nil {
		t.Fatalf("got %v, want the old entry decoded", err)
	}
	p, _ := c.Payload.(Pause)
	if want := "deploy \u202edetrever\u2028forged"; p.Reason != want {
		t.Errorf("got reason %q, want %q as it was written", p.Reason, want)
	}
	if got, want := EscapeText(p.Reason), `deploy \u202edetrever\u2028forged`; got != want {
		t.Errorf("EscapeText(%q): got %q, want %q", p.Reason, got, want)
	}
	for in, want := range map[string]string{
		"a\u2067b\u2069c\ufeff":  `a\u2067b\u2069c\ufeff`,
		"tag\U000e0041":          `tag\U000e0041`,
		"می\u200cخواهم 👩\u200d🔧": "می\u200cخواهم 👩\u200d🔧",
	} {
		if got := EscapeText(in); got != want {
			t.Errorf("EscapeText(%q): got %q, want %q", in, got, want)
		}
	}
}

// EscapeFormat escapes only the format characters: a document's line
// breaks, tabs and invalid bytes stay as they are.
func TestEscapeFormatLeavesTheRestOfADocument(t *testing.T) {
	for in, want := range map[string]string{
		"<p>\n\tplain</p>":         "<p>\n\tplain</p>",
		"<p>a\u202eb\u2028c</p>\n": `<p>a\u202eb\u2028c</p>` + "\n",
		"bad \xff \u200f":          "bad \xff \\u200f",
		"👩\u200d🔧":                 "👩\u200d🔧",
	} {
		if got := EscapeFormat(in); got != want {
			t.Errorf("EscapeFormat(%q): got %q, want %q", in, got, want)
		}
	}
}
