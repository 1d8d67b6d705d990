package daemon

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A port picked by listening on :0 and closing the listener is free only
// for a moment: the kernel hands the same ephemeral range to every
// outgoing connection and every :0 listener on the machine, and a busy
// test run opens thousands of them. A server started a second later on
// that port then fails to bind (RabbitMQ's "dist_port_already_used" was
// the one seen in CI). Two test runs at once on one machine also picked
// each other's ports.
//
// So FreePorts hands out ports from outside the ephemeral range, which
// the kernel never gives away by itself, and reserves each for the life
// of the test process with a byte-range lock on one file shared by every
// process on the machine (PortLockFile). The locks go away with the
// process, even when it is killed, so nothing needs cleaning up.

// PortLockFile is the file whose byte n is locked by the process that
// holds port n.
var PortLockFile = filepath.Join(os.TempDir(), "drwatch-test-ports.lock")

// ErrNoFreePort means every port of the reservable range is in use or
// reserved by a test process.
var ErrNoFreePort = errors.New("no free port")

// lowestPort keeps clear of the well-known and registered ports that
// system services on a developer's machine listen on.
const lowestPort = 10000

var ports struct {
	sync.Mutex
	lock *os.File
	// given holds the ports this process reserved: fcntl locks never
	// conflict with the process's own, so the file cannot tell us.
	given map[int]bool
	// ranges is where ports come from; set once from the kernel's
	// ephemeral range, and by tests.
	ranges [][2]int
}

// FreePorts returns n distinct ports free for both TCP and UDP on
// 127.0.0.1 and reserved for this process: no other test process on the
// machine gets them from FreePorts, and the kernel does not give them to
// outgoing connections.
func FreePorts(n int) ([]int, error) { return FreePortsOn("127.0.0.1", n) }

// FreePortsOn is FreePorts for another loopback address, such as
// 127.0.0.2. A port is reserved machine-wide whatever the address.
func FreePortsOn(ip string, n int) ([]int, error) {
	ports.Lock()
	defer ports.Unlock()
	if ports.lock == nil {
		f, err := os.OpenFile(PortLockFile, os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			return nil, fmt.Errorf("port reservations: %w", err)
		}
		// Any user's test run may reserve ports; umask would stop the
		// next user from locking.
		_ = f.Chmod(0o666)
		ports.lock = f
		ports.given = map[int]bool{}
	}
	if ports.ranges == nil {
		r, err := reservableRanges()
		if err != nil {
			return nil, err
		}
		ports.ranges = r
	}
	total := 0
	for _, r := range ports.ranges {
		total += r[1] - r[0] + 1
	}
	out := make([]int, 0, n)
	start := rand.IntN(total)
	for i := 0; i < total && len(out) < n; i++ {
		p := nth(ports.ranges, (start+i)%total)
		if ports.given[p] {
			continue
		}
		ok, err := reserve(ports.lock, p)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if !bindable(ip, p) {
			unreserve(ports.lock, p)
			continue
		}
		ports.given[p] = true
		out = append(out, p)
	}
	if len(out) < n {
		// Keep the ones found: they stay reserved, and handing them back
		// could give them to a racing caller in this process anyway.
		return nil, fmt.Errorf("found %d of %d ports in %v: %w", len(out), n, ports.ranges, ErrNoFreePort)
	}
	return out, nil
}

// nth is the i-th port of the ranges taken in order.
func nth(ranges [][2]int, i int) int {
	for _, r := range ranges {
		if size := r[1] - r[0] + 1; i >= size {
			i -= size
			continue
		}
		return r[0] + i
	}
	panic("port index out of range")
}

// reservableRanges is [lowestPort, 65535] without the kernel's ephemeral
// range (net.ipv4.ip_local_port_range).
func reservableRanges() ([][2]int, error) {
	lo, hi := 32768, 60999 // Linux's default
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 {
			l, err1 := strconv.Atoi(f[0])
			h, err2 := strconv.Atoi(f[1])
			if err1 == nil && err2 == nil && l <= h {
				lo, hi = l, h
			}
		}
	}
	var out [][2]int
	if lo > lowestPort {
		out = append(out, [2]int{lowestPort, lo - 1})
	}
	if hi < 65535 {
		out = append(out, [2]int{max(hi+1, lowestPort), 65535})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the ephemeral port range %d-%d leaves no port above %d to reserve: %w", lo, hi, lowestPort, ErrNoFreePort)
	}
	return out, nil
}

// reserve takes the lock on byte p of f without waiting; false means
// another process holds it.
func reserve(f *os.File, p int) (bool, error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: int64(p), Len: 1}
	err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EACCES):
		return false, nil
	default:
		return false, fmt.Errorf("reserve port %d in %s: %w", p, f.Name(), err)
	}
}

func unreserve(f *os.File, p int) {
	lk := syscall.Flock_t{Type: syscall.F_UNLCK, Whence: 0, Start: int64(p), Len: 1}
	_ = syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
}

// bindable reports whether port p is free for TCP and UDP on ip: a
// server outside the test run may listen on it.
func bindable(ip string, p int) bool {
	addr := net.JoinHostPort(ip, strconv.Itoa(p))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer l.Close()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	pc.Close()
	return true
}
