package api

import (
	"strings"
	"testing"
)

func TestParseTokens(t *testing.T) {
	good := "# operators\nalice: 0123456789abcdef0123\n\nbob:fedcba9876543210fedc\n"
	tk, err := ParseTokens([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tok, actor string
		ok         bool
	}{
		{"0123456789abcdef0123", "alice", true},
		{"fedcba9876543210fedc", "bob", true},
		{"0123456789abcdef012", "", false},
		{"", "", false},
		{"wrong-token-wrong-token", "", false},
	} {
		actor, ok := tk.Actor(tt.tok)
		if actor != tt.actor || ok != tt.ok {
			t.Errorf("Actor(%q): got %q %v, want %q %v", tt.tok, actor, ok, tt.actor, tt.ok)
		}
	}
	const secret = "s3cr3t-but-short"
	for _, bad := range []string{"", "# only\n", "alice\n", ":" + secret + "xx\n", "al ice:" + secret + "xxxx\n",
		"alice:short\n", "a:" + secret + "xx\nb:" + secret + "xx\n"} {
		_, err := ParseTokens([]byte(bad))
		if err == nil {
			t.Errorf("%q: got nil error", bad)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%q: error leaks the token: %v", bad, err)
		}
	}
}

// The watchers' tokens file binds every token to an actor, so a line holding
// only a token is refused, naming the line, whatever its length.
func TestTokensFileRejectsBareTokenLine(t *testing.T) {
	const bare = "0123456789abcdef0123456789abcdef"
	for _, file := range []string{bare + "\n", "# operators\nalice:fedcba9876543210fedc\n" + bare + "\n"} {
		_, err := ParseTokens([]byte(file))
		if err == nil {
			t.Errorf("%q: got nil error, want a bare token line refused", file)
			continue
		}
		if !strings.Contains(err.Error(), "want actor:token") || strings.Contains(err.Error(), bare) {
			t.Errorf("%q: got %v, want the line number and 'want actor:token', without the token", file, err)
		}
	}
}

// A line may end in a role; without one the token keeps full power, as
// every tokens file written before roles existed means.
func TestParseTokensRoles(t *testing.T) {
	tk, err := ParseTokens([]byte("old:0123456789abcdef0000\nr:0123456789abcdef0001:read\no:0123456789abcdef0002:operate\na:0123456789abcdef0003:admin\nsp: 0123456789abcdef0004 : operate \n" +
		"colon:0123456789abcdef:root\ncolon-role:0123456789abcdef:x:read\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tok, actor string
		role       Role
	}{
		{"0123456789abcdef0000", "old", RoleAdmin},
		{"0123456789abcdef0001", "r", RoleRead},
		{"0123456789abcdef0002", "o", RoleOperate},
		{"0123456789abcdef0003", "a", RoleAdmin},
		{"0123456789abcdef0004", "sp", RoleOperate},
		// A token always could hold ':'; text after it that is no role is token.
		{"0123456789abcdef:root", "colon", RoleAdmin},
		{"0123456789abcdef:x", "colon-role", RoleRead},
	} {
		actor, role, ok := tk.Lookup(tt.tok)
		if !ok || actor != tt.actor || role != tt.role {
			t.Errorf("Lookup(%q): got %q %v %v, want %q %v true", tt.tok, actor, role, ok, tt.actor, tt.role)
		}
	}
	const secret = "s3cr3t-but-long-enough"
	for _, bad := range []string{"alice:" + secret + ":\n", "alice:" + secret + ":Read\n", "alice:" + secret + ": OPERATE\n"} {
		_, err := ParseTokens([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "read, operate or admin") {
			t.Errorf("%q: got %v, want line 1 refused naming the roles", bad, err)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%q: error leaks the token: %v", bad, err)
		}
	}
}
