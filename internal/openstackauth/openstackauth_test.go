package openstackauth

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/internal/field"
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

// Credentials are a cloud, or auth_url with both application credential
// files; a field of the other shape is named at its own path, every
// problem at once. Both shapes, complete, pass.
func TestValidateNamesEachFieldOfTheWrongShape(t *testing.T) {
	appcred := Credentials{AuthURL: "https://keystone.example:5000/v3", ApplicationCredentialIDFile: "/i", ApplicationCredentialSecretFile: "/s", CAFile: "/ca", Region: "r1"}
	for _, tc := range []struct {
		name string
		c    Credentials
		want string // every problem, as Error shows them; empty means valid
	}{
		{"cloud", Credentials{Cloud: "c", CloudsFile: "/c.yaml", Region: "r1"}, ""},
		{"application credential", appcred, ""},
		{"nothing", Credentials{}, "auth_url: required\napplication_credential_id_file: required\napplication_credential_secret_file: required"},
		{"cloud with every application credential field", Credentials{Cloud: "c", AuthURL: "https://k/v3", ApplicationCredentialIDFile: "/i", ApplicationCredentialSecretFile: "/s", CAFile: "/ca"},
			"auth_url: set either cloud or application credentials, not both\napplication_credential_id_file: set either cloud or application credentials, not both\n" +
				"application_credential_secret_file: set either cloud or application credentials, not both\nca_file: only with auth_url (clouds.yaml has cacert)"},
		{"cloud with a secret file alone", Credentials{Cloud: "c", ApplicationCredentialSecretFile: "/s"}, "application_credential_secret_file: set either cloud or application credentials, not both"},
		{"auth_url not a URL", Credentials{AuthURL: "keystone:5000", ApplicationCredentialIDFile: "/i", ApplicationCredentialSecretFile: "/s"}, `auth_url: "keystone:5000" must be an http(s) URL`},
		{"auth_url without the id file", Credentials{AuthURL: "https://k/v3", ApplicationCredentialSecretFile: "/s"}, "application_credential_id_file: required"},
		{"blank secret file", Credentials{AuthURL: "https://k/v3", ApplicationCredentialIDFile: "/i", ApplicationCredentialSecretFile: " "}, "application_credential_secret_file: required"},
		{"clouds_file without cloud", Credentials{CloudsFile: "/c.yaml", AuthURL: "https://k/v3", ApplicationCredentialIDFile: "/i", ApplicationCredentialSecretFile: "/s"}, "clouds_file: needs cloud"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := tc.c.Validate().Err(); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Files lists exactly the files AuthOptions reads for the shape set, each
// with its field, so a config check reads what the run will read.
func TestFilesAreThoseOfTheShapeSet(t *testing.T) {
	byCloud := Credentials{Cloud: "c", CloudsFile: "/c.yaml"}
	if got, want := byCloud.Files(), []field.File{{Field: "clouds_file", Path: "/c.yaml"}}; !slices.Equal(got, want) {
		t.Errorf("cloud: got %v, want %v", got, want)
	}
	if got := (Credentials{Cloud: "c"}).Files(); got != nil {
		t.Errorf("cloud searching the usual places: got %v, want none", got)
	}
	appcred := Credentials{AuthURL: "https://k/v3", ApplicationCredentialIDFile: "/i", ApplicationCredentialSecretFile: "/s", CAFile: "/ca"}
	want := []field.File{{Field: "application_credential_id_file", Path: "/i"}, {Field: "application_credential_secret_file", Path: "/s"}, {Field: "ca_file", Path: "/ca"}}
	if got := appcred.Files(); !slices.Equal(got, want) {
		t.Errorf("application credential: got %v, want %v", got, want)
	}
}
