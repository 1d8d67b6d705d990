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
