package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// confirmer asks a human to type a phrase before a write. With no terminal
// on stdin it refuses at once instead of waiting for input that will never
// come.
type confirmer struct {
	in     io.Reader
	out    io.Writer
	isTerm func() bool
}

// newConfirmer reads from in, which counts as a terminal only if it is a
// file whose descriptor answers the terminal ioctl (/dev/null, a pipe or a
// test's reader do not).
func newConfirmer(in io.Reader, out io.Writer) confirmer {
	return confirmer{in: in, out: out, isTerm: func() bool {
		f, ok := in.(*os.File)
		if !ok {
			return false
		}
		_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
		return err == nil
	}}
}

var errNotConfirmed = errors.New("not confirmed; nothing was changed")

// confirm shows what is about to happen and asks for phrase.
func (c confirmer) confirm(summary, phrase string) error {
	if !c.isTerm() {
		return usageError{errors.New("no terminal to confirm on: review with --dry-run, then pass --yes")}
	}
	fmt.Fprint(c.out, summary)
	fmt.Fprintf(c.out, "\nType %q to proceed: ", phrase)
	line, err := bufio.NewReader(c.in).ReadString('\n')
	if err != nil && line == "" {
		return errNotConfirmed
	}
	if strings.TrimSpace(line) != phrase {
		return errNotConfirmed
	}
	return nil
}
