package regularfile

import (
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Special files are refused by what they are, whatever the path says and
// after following symbolic links, and the refusal names the field; a
// regular file, through a link or not, is read.
func TestReadRefusesAllButRegularFiles(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "key")
	if err := os.WriteFile(plain, []byte("k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	linkToPlain := filepath.Join(dir, "key-link")
	if err := os.Symlink(plain, linkToPlain); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	linkToZero := filepath.Join(dir, "zero-link")
	if err := os.Symlink("/dev/zero", linkToZero); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("a"), MaxSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	exact := filepath.Join(dir, "exact")
	if err := os.WriteFile(exact, bytes.Repeat([]byte("a"), MaxSize), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name, path string
		want       error // nil: read
		reason     string
	}{
		{"regular", plain, nil, ""},
		{"link to regular", linkToPlain, nil, ""},
		{"exactly MaxSize", exact, nil, ""},
		{"/dev/zero", "/dev/zero", ErrNotRegular, "a character device"},
		{"/dev/urandom", "/dev/urandom", ErrNotRegular, "a character device"},
		{"link to /dev/zero", linkToZero, ErrNotRegular, "a character device"},
		{"FIFO without a writer", fifo, ErrNotRegular, "a FIFO"},
		{"socket", sock, ErrNotRegular, "not a regular file"},
		{"directory", dir, syscall.EISDIR, "is a directory"},
		{"/proc/self/mem", "/proc/self/mem", ErrPseudoFile, "pseudo file"},
		{"/proc/self/environ", "/proc/self/environ", ErrPseudoFile, "pseudo file"},
		{"larger than MaxSize", big, ErrTooLarge, "larger than"},
		{"missing", filepath.Join(dir, "nope"), fs.ErrNotExist, "no such file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Read("tls.key_file", tt.path)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %v, want the content", err)
				}
				if len(b) == 0 {
					t.Fatal("got no content")
				}
				if err := Check("tls.key_file", tt.path); err != nil {
					t.Fatalf("Check: got %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			var fe *Error
			if !errors.As(err, &fe) || fe.Field != "tls.key_file" {
				t.Fatalf("got %#v, want an *Error naming the field", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "tls.key_file: ") || !strings.Contains(msg, tt.reason) || !strings.Contains(msg, ValueNotShown) {
				t.Errorf("got %q, want the field, %q and %q", msg, tt.reason, ValueNotShown)
			}
			if strings.Contains(msg, tt.path) || strings.Contains(msg, dir) {
				t.Errorf("got %q: it holds the path", msg)
			}
			if err := Check("tls.key_file", tt.path); !errors.Is(err, tt.want) {
				t.Errorf("Check: got %v, want %v", err, tt.want)
			}
		})
	}
}
