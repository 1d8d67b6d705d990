package api

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// svgText parses an SVG document strictly and returns its root name, its
// <title> and all text content.
func svgText(t *testing.T, b []byte) (root, title, all string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var stack []string
	var sb strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("badge is not well-formed XML: %v\n%s", err, b)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = x.Name.Local
				if x.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace: got %q, want the SVG namespace", x.Name.Space)
				}
			}
			for _, a := range x.Attr {
				if strings.HasPrefix(a.Value, "http") && a.Name.Local != "xmlns" || strings.HasPrefix(strings.ToLower(a.Name.Local), "on") {
					t.Errorf("badge attribute %s=%q: want no external reference or handler", a.Name.Local, a.Value)
				}
			}
			stack = append(stack, x.Name.Local)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 && stack[len(stack)-1] == "title" {
				title += string(x)
			}
			if len(stack) > 0 && stack[len(stack)-1] == "text" {
				sb.Write(x)
				sb.WriteByte(' ')
			}
		}
	}
	return root, title, sb.String()
}

func TestBadges(t *testing.T) {
	noLeader := fxNoLeader()
	weird := fxFailedOver()
	weird.State.Active = `<x&"y>`
	for _, tt := range []struct {
		name, path string
		st         Status
		title      string
		color      string
	}{
		{"active backup", "/badge/active.svg", fxFailedOver(), "active: backup", badgeOrange},
		{"active primary", "/badge/active.svg", fxPending(), "active: primary", badgeGreen},
		{"primary down", "/badge/primary.svg", fxFailedOver(), "primary: down (2/3)", badgeRed},
		{"primary up", "/badge/primary.svg", fxPending(), "primary: up (1/3)", badgeGreen},
		{"no leader greys out", "/badge/active.svg", noLeader, "active: backup, no leader", badgeGrey},
		{"primary no leader", "/badge/primary.svg", noLeader, "primary: down (2/3), no leader", badgeGrey},
		{"hostile value is escaped", "/badge/active.svg", weird, "active: unknown", badgeGrey},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := pageGet(t, pageServer(t, tt.st, nil), tt.path)
			if resp.StatusCode != 200 {
				t.Fatalf("got status %d, want 200", resp.StatusCode)
			}
			for h, want := range map[string]string{"Content-Type": "image/svg+xml; charset=utf-8", "Cache-Control": "no-store, max-age=0"} {
				if got := resp.Header.Get(h); got != want {
					t.Errorf("%s: got %q, want %q", h, got, want)
				}
			}
			root, title, all := svgText(t, body)
			if root != "svg" {
				t.Errorf("root element: got %q, want svg", root)
			}
			if title != tt.title {
				t.Errorf("title: got %q, want %q", title, tt.title)
			}
			label, value, _ := strings.Cut(tt.title, ": ")
			if !strings.Contains(all, label) || !strings.Contains(all, value) {
				t.Errorf("text: got %q, want %q and %q", all, label, value)
			}
			if !bytes.Contains(body, []byte(`fill="`+tt.color+`"`)) {
				t.Errorf("colour: want fill %s in\n%s", tt.color, body)
			}
		})
	}
	resp, _ := pageGet(t, pageServer(t, fxFailedOver(), nil), "/badge/nope.svg")
	if resp.StatusCode != 404 {
		t.Errorf("unknown badge: got %d, want 404", resp.StatusCode)
	}
}

func TestBadgeWidthFitsText(t *testing.T) {
	short, long := Badge{Label: "active", Value: "up"}.SVG(), Badge{Label: "active", Value: "backup, no leader"}.SVG()
	if len(long) <= len(short) {
		t.Fatal("badge SVG does not grow with its text")
	}
	for _, v := range []string{"primary", "backup, no leader", "down (2/3), stale", "WWWWWWW"} {
		if w := textWidth(v); w < 6*len(v) {
			t.Errorf("textWidth(%q): got %d px, want at least %d (6 px a character)", v, w, 6*len(v))
		}
	}
}
