package peer

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// The owner of a connection from this process is this process's user, for
// an IPv4 and an IPv6 loopback listener.
func TestUIDOfOwnConnection(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the owner of a connection is read on Linux only")
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if strings.HasPrefix(addr, "[") {
				continue // no IPv6 loopback here
			}
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err == nil {
				time.Sleep(time.Second)
				c.Close()
			}
		}()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		uid, err := UID(c)
		c.Close()
		if err != nil || uid != os.Getuid() {
			t.Errorf("%s: UID = %d, %v; want %d", addr, uid, err, os.Getuid())
		}
	}
}

// SameUser serves this user's connections and closes another user's at
// once: a client run as nobody reads nothing, this user's client reads the
// greeting. (Running a process as another user needs root: CI runs as root.)
func TestSameUserRefusesAnotherUser(t *testing.T) {
	runuser := testenv.RunUser(t)
	var mu sync.Mutex
	var refused []int
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl := SameUser(ln, func(uid int) { mu.Lock(); refused = append(refused, uid); mu.Unlock() })
	defer sl.Close()
	go func() {
		for {
			c, err := sl.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	// A client in Go (this process, root): served.
	c, err := net.DialTimeout("tcp", ln.Addr().String(), testenv.Timeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if line != "hello\n" {
		t.Fatalf("this user's client read %q, want the greeting", line)
	}
	// The same client as nobody: closed before a byte.
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	out, _ := exec.Command(runuser, "-u", "nobody", "--", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/"+port+"; timeout 5 cat <&3").CombinedOutput()
	if strings.Contains(string(out), "hello") {
		t.Fatalf("a client run as nobody was served: %q", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refused) != 1 || refused[0] == 0 {
		t.Errorf("refused %v, want nobody's uid once", refused)
	}
}
