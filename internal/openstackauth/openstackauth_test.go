package openstackauth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLooksLikeID: only the 36-character UUID form is an ID;
// anything else is looked up as a name.
func TestLooksLikeID(t *testing.T) {
	for s, want := range map[string]bool{
		"9dfa1e0a-ae0c-4607-9c01-e5017e8024b7": true,
		"9DFA1E0A-AE0C-4607-9C01-E5017E8024B7": true,
		"9dfa1e0aae0c46079c01e5017e8024b7":     false, // no dashes
		"9dfa1e0a-ae0c-4607-9c01-e5017e8024bx": false,
		"9dfa1e0a-ae0c-4607-9c01_e5017e8024b7": false,
		"tutor-ingress":                        false,
		"":                                     false,
	} {
		if got := LooksLikeID(s); got != want {
			t.Errorf("LooksLikeID(%q) = %v, want %v", s, got, want)
		}
	}
}

// A credential file that cannot be used is named in the error by its
// field; its content, the secret, and its path never are.
func TestAuthOptionsNeverQuoteASecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	id := write("id", "app-cred-id\n")
	for name, content := range map[string]string{"two-lines": "s3cr3t-one\ns3cr3t-two\n", "blank": "  \n"} {
		c := Credentials{AuthURL: "https://keystone.example:5000/v3", ApplicationCredentialIDFile: id,
			ApplicationCredentialSecretFile: write(name, content)}
		_, _, _, err := c.AuthOptions()
		if err == nil || !strings.Contains(err.Error(), "application_credential_secret_file: ") || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("secret file %s: got %v, want an error naming the field and not the file's content", name, err)
		}
		// Nor its path: a path field may hold a secret pasted in the wrong place.
		if err != nil && strings.Contains(err.Error(), dir) {
			t.Errorf("secret file %s: got %v, want no path", name, err)
		}
	}
	c := Credentials{AuthURL: "https://keystone.example:5000/v3", ApplicationCredentialIDFile: id,
		ApplicationCredentialSecretFile: write("ok", "s3cr3t\n"), Region: "r1"}
	ao, eo, _, err := c.AuthOptions()
	if err != nil || ao.ApplicationCredentialID != "app-cred-id" || ao.ApplicationCredentialSecret != "s3cr3t" || eo.Region != "r1" {
		t.Errorf("got %+v %+v %v, want the id and secret read from their files, region r1", ao.IdentityEndpoint, eo, err)
	}
}
