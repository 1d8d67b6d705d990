package daemon

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// childPortsEnv makes the test binary a second test process that
// reserves ports from a narrow range, prints them and holds them until
// its stdin closes.
const childPortsEnv = "DAEMON_TEST_RESERVE_PORTS"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childPortsEnv); spec != "" {
		os.Exit(reservingChild(spec))
	}
	os.Exit(m.Run())
}

type childSpec struct {
	Lock   string
	Ranges [][2]int
	N      int
}

func reservingChild(spec string) int {
	var s childSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	PortLockFile = s.Lock
	ports.ranges = s.Ranges
	got, err := FreePorts(s.N)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	b, _ := json.Marshal(got)
	fmt.Println(string(b))
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

// useRange points this process's reservations at a private lock file and
// the given port range, as a second test run on the machine would share
// them.
func useRange(t *testing.T, ranges [][2]int) string {
	t.Helper()
	lock := t.TempDir() + "/ports.lock"
	ports.Lock()
	oldFile, oldLock, oldGiven, oldRanges := PortLockFile, ports.lock, ports.given, ports.ranges
	PortLockFile, ports.lock, ports.given, ports.ranges = lock, nil, nil, ranges
	ports.Unlock()
	t.Cleanup(func() {
		ports.Lock()
		defer ports.Unlock()
		if ports.lock != nil {
			ports.lock.Close()
		}
		PortLockFile, ports.lock, ports.given, ports.ranges = oldFile, oldLock, oldGiven, oldRanges
	})
	return lock
}

// startReserver runs a second process that reserves n ports and holds
// them until the test ends.
func startReserver(t *testing.T, lock string, ranges [][2]int, n int) ([]int, error) {
	t.Helper()
	spec, _ := json.Marshal(childSpec{Lock: lock, Ranges: ranges, N: n})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childPortsEnv+"="+string(spec))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reserving process printed nothing: %v", err)
	}
	var got []int
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		return nil, fmt.Errorf("reserving process: %s", line)
	}
	return got, nil
}

// Two test processes on one machine never get the same port, even from
// a range so small that picking at random would collide: the reservation
// is machine-wide, not per process.
func TestTwoProcessesNeverGetTheSamePort(t *testing.T) {
	base := freeBlock(t, 40)
	ranges := [][2]int{{base, base + 39}}
	lock := useRange(t, ranges)
	theirs, err := startReserver(t, lock, ranges, 20)
	if err != nil {
		t.Fatal(err)
	}
	mine, err := FreePorts(20)
	if err != nil {
		t.Fatalf("20 ports left in a range of 40 with 20 held by another process: %v", err)
	}
	held := map[int]bool{}
	for _, p := range theirs {
		held[p] = true
	}
	for _, p := range mine {
		if held[p] {
			t.Fatalf("port %d given to both processes (theirs %v, mine %v)", p, theirs, mine)
		}
		if p < base || p > base+39 {
			t.Fatalf("port %d outside the range %v", p, ranges)
		}
	}
	// The range is now used up by the two processes together.
	if _, err := FreePorts(1); err == nil {
		t.Fatal("a 41st port came out of a range of 40")
	}
}

// A port some other program listens on is never handed out, and neither
// is one this process already has.
func TestFreePortsSkipsListeningAndGivenPorts(t *testing.T) {
	base := freeBlock(t, 3)
	useRange(t, [][2]int{{base, base + 2}})
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+1))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got, err := FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] == base+1 || got[1] == base+1 || got[0] == got[1] {
		t.Fatalf("got %v with %d listened on", got, base+1)
	}
	if _, err := FreePorts(1); err == nil {
		t.Fatal("a port came out of a range whose ports are all given or listened on")
	}
}

// The default ranges leave out the kernel's ephemeral range, from which
// outgoing connections and :0 listeners take their ports at any moment.
func TestDefaultRangesAvoidTheEphemeralRange(t *testing.T) {
	ranges, err := reservableRanges()
	if err != nil {
		t.Fatal(err)
	}
	// A listener on :0 gets an ephemeral port.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	eph := l.Addr().(*net.TCPAddr).Port
	l.Close()
	for _, r := range ranges {
		if eph >= r[0] && eph <= r[1] {
			t.Fatalf("ephemeral port %d inside the reservable range %v", eph, r)
		}
		if r[0] < lowestPort {
			t.Fatalf("range %v reaches below %d", r, lowestPort)
		}
	}
}

// freeBlock finds n consecutive ports, outside the ephemeral range, that
// nothing listens on now.
func freeBlock(t *testing.T, n int) int {
	t.Helper()
	ranges, err := reservableRanges()
	if err != nil {
		t.Fatal(err)
	}
	r := ranges[0]
next:
	for base := r[0] + 5000; base+n-1 <= r[1]; base += n {
		for p := base; p < base+n; p++ {
			if !bindable("127.0.0.1", p) {
				continue next
			}
		}
		return base
	}
	t.Fatalf("no %d consecutive free ports in %v", n, r)
	return 0
}
