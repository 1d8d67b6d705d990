package regularfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxSize is the most a file field may hold: 1 MiB, far above any key,
// certificate bundle, kubeconfig or token list, and small enough that a
// wrong path costs no memory worth speaking of.
const MaxSize = 1 << 20

// Sentinel errors for the refusals; an [*Error] wraps one of them or the
// error number the system returned (so errors.Is(err, fs.ErrNotExist)
// works).
var (
	// ErrNotRegular: a device, FIFO, socket, directory or other special
	// file, after following symbolic links.
	ErrNotRegular = errors.New("not a regular file")
	// ErrPseudoFile: a file of /proc or /sys, regular in name only: it has
	// no size and may have no end.
	ErrPseudoFile = errors.New("a kernel pseudo file (/proc, /sys), not a file on disk")
	// ErrTooLarge: more than MaxSize bytes.
	ErrTooLarge = fmt.Errorf("larger than %d bytes", MaxSize)
)

// Error is a refusal to read the file a field names. It names the field
// and the reason, never the path or the content.
type Error struct {
	Field string // the field's path, e.g. tls.key_file
	Err   error  // a sentinel above, or a syscall.Errno
}

// ValueNotShown ends every message about a path that is withheld.
const ValueNotShown = "value not shown: it may be a secret"

// Error says the field, the reason and that the value is withheld.
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%s)", e.Field, Reason(e.Err), ValueNotShown)
}

// Unwrap returns the reason, for errors.Is.
func (e *Error) Unwrap() error { return e.Err }

// Reason says what is wrong from the kind of err alone, in words that hold
// no path.
func Reason(err error) string {
	var fe *Error
	if errors.As(err, &fe) {
		err = fe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, syscall.ENOTDIR):
		return "a parent is not a directory"
	case errors.Is(err, syscall.ENAMETOOLONG):
		return "name too long"
	case errors.Is(err, syscall.ELOOP):
		return "too many symbolic links"
	case errors.Is(err, syscall.EISDIR):
		return "is a directory, want a file"
	case errors.Is(err, ErrNotRegular), errors.Is(err, ErrPseudoFile), errors.Is(err, ErrTooLarge):
		return err.Error()
	}
	return "cannot read the file"
}

// Read returns the content of the regular file at path, which the field
// named field holds. It refuses a special file or one larger than MaxSize
// with an [*Error].
func Read(field, path string) ([]byte, error) {
	f, err := open(field, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The size from stat is not trusted: the file may grow meanwhile.
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	switch {
	case err != nil:
		return nil, &Error{Field: field, Err: bare(err)}
	case len(b) > MaxSize:
		return nil, &Error{Field: field, Err: ErrTooLarge}
	}
	return b, nil
}

// Check reports whether Read would accept the file at path, without
// reading it.
func Check(field, path string) error {
	f, err := open(field, path)
	if err != nil {
		return err
	}
	return f.Close()
}

// open opens path without blocking (a FIFO with no writer would hang a
// blocking open) and checks what it opened, so that the file checked is the
// file read even if the path is swapped meanwhile.
func open(field, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, syscall.ENXIO):
		// What opening a socket gives.
		return nil, &Error{Field: field, Err: ErrNotRegular}
	case err != nil:
		return nil, &Error{Field: field, Err: bare(err)}
	}
	refuse := func(err error) (*os.File, error) {
		f.Close()
		return nil, &Error{Field: field, Err: err}
	}
	st, err := f.Stat()
	switch {
	case err != nil:
		return refuse(bare(err))
	case st.IsDir():
		return refuse(syscall.EISDIR)
	case !st.Mode().IsRegular():
		return refuse(fmt.Errorf("%s, %w", kind(st.Mode()), ErrNotRegular))
	case st.Size() > MaxSize:
		return refuse(ErrTooLarge)
	}
	if pseudo, err := onPseudoFS(f); err != nil {
		return refuse(bare(err))
	} else if pseudo {
		return refuse(ErrPseudoFile)
	}
	return f, nil
}

// kind names a special file's type.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}

// bare strips the path an *fs.PathError carries, keeping its cause.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
