package dnsprovider

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

// A base64 secret may hold "//", which looks like a BIND comment. Both
// key-file formats must read every secret back exactly (regression: about 1%
// of random secrets were cut at "//").
func TestTSIGKeyFileSecretsWithCommentLookalikes(t *testing.T) {
	secrets := []string{
		"ab//cdEFghIJklMNopQRstUVwxYZ0123456789+/ABC=",
		"//abcdEFghIJklMNopQRstUVwxYZ0123456789+/ABC=",
	}
	for i := 0; i < 3000; i++ {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		secrets = append(secrets, base64.StdEncoding.EncodeToString(b))
	}
	for _, sec := range secrets {
		raw, err := base64.StdEncoding.DecodeString(sec)
		if err != nil {
			t.Fatalf("test secret is not base64: %v", err)
		}
		want := base64.StdEncoding.EncodeToString(raw)
		formats := map[string]string{
			"clause":               fmt.Sprintf("key \"drwatch.\" {\n\talgorithm hmac-sha256;\n\tsecret \"%s\";\n};\n", sec),
			"clause with comments": fmt.Sprintf("# made by tsig-keygen\nkey \"drwatch.\" { // the update key\n\talgorithm hmac-sha256; /* sha256 */\n\tsecret \"%s\";\n};\n", sec),
			"bare":                 sec + "\n",
			"bare with a comment":  "# drwatch update key\n" + sec + "\n",
		}
		for name, file := range formats {
			k, err := ParseTSIGKey([]byte(file), "drwatch.", "hmac-sha256")
			if err != nil {
				t.Fatalf("%s, secret with %q: %v", name, firstSlashes(sec), err)
			}
			if k.Secret() != want {
				t.Fatalf("%s: read back a different secret", name)
			}
		}
	}
}

func firstSlashes(s string) string {
	if i := strings.Index(s, "/"); i >= 0 {
		return s[i:min(len(s), i+2)]
	}
	return ""
}
