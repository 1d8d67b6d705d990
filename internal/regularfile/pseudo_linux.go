package regularfile

import (
	"os"
	"syscall"
)

// Magic numbers of the file systems whose files claim to be regular but
// are the kernel's (linux/magic.h).
const (
	procSuperMagic  = 0x9fa0
	sysfsMagic      = 0x62656572
	debugfsMagic    = 0x64626720
	securityfsMagic = 0x73636673
	tracefsMagic    = 0x74726163
)

// onPseudoFS reports whether f lies on a kernel pseudo file system.
func onPseudoFS(f *os.File) (bool, error) {
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(f.Fd()), &st); err != nil {
		return false, err
	}
	switch int64(st.Type) {
	case procSuperMagic, sysfsMagic, debugfsMagic, securityfsMagic, tracefsMagic:
		return true, nil
	}
	return false, nil
}
