package config

import (
	"bytes"
	"os"
	"testing"
)

// docs/configuration.md is generated from the config structs; this keeps them in step.
func TestReferenceMatchesDocs(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReference(&b); err != nil {
		t.Fatal(err)
	}
	const path = "../../../docs/configuration.md"
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v (regenerate: go run ./cmd/drwatch config docs > docs/configuration.md)", path, err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Errorf("%s is out of date; regenerate: go run ./cmd/drwatch config docs > docs/configuration.md", path)
	}
}
