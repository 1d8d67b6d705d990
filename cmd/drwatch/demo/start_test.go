package demo

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// A demo that cannot start returns the error and cleans up; it does not
// panic on the way out.
func TestDemoThatCannotStartReturnsTheError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(context.Background(), Options{Dir: filepath.Join(file, "demo"), Out: io.Discard}); err == nil {
		t.Fatal("got no error, want the directory's")
	}
}
