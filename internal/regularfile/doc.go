// Package regularfile reads the files a configuration names (secrets,
// credentials, CA bundles, kubeconfigs, token lists) and refuses anything
// that is not a plain file on disk: a device (/dev/zero, /dev/urandom), a
// FIFO, a socket, a directory, or a file of a kernel pseudo file system
// (/proc/self/mem, /sys/...), each of which would hang start-up or feed it
// gigabytes. Symbolic links are followed, and what they lead to must be a
// regular file. At most [MaxSize] bytes are read.
//
// Its errors never hold the path or the content: a path field may hold a
// secret pasted in the wrong place, and an *fs.PathError would print it.
// Each error names the field the caller gave, what is wrong, and says the
// value is not shown.
//
// It imports only the standard library, so that every package that reads a
// file may use it: test/importrules holds it to that.
package regularfile
