package mcpserver

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// A hub announced at a port that another user of the machine now listens
// on (the hub died, its pid and port were taken) is not relayed to: the
// bearer token is never sent there. (Running a listener as another user
// needs root: CI runs as root.)
func TestRelayRefusesAnotherUsersListener(t *testing.T) {
	runuser := testenv.RunUser(t)
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	_, port, _ := net.SplitHostPort(addr)
	// runuser starts the listener as its child: both in a process group of
	// their own, ended together (killing runuser alone left nobody's
	// listener running after every run of the suite).
	fake := exec.Command(runuser, "-u", "nobody", "--", testenv.Node(t), "-e", `require("net").createServer(c => c.end()).listen(`+port+`, "127.0.0.1")`)
	fake.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := fake.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-fake.Process.Pid, syscall.SIGKILL); _ = fake.Wait() }()
	deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nobody's listener did not come up at %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err = dialOwn(context.Background(), &net.Dialer{Timeout: 2 * time.Second}, addr)
	if err == nil || !strings.Contains(err.Error(), "belongs to another user") {
		t.Fatalf("dialOwn to nobody's listener: %v, want a refusal", err)
	}

	// The endpoint file names this process (alive, ours) and nobody's port.
	dir := t.TempDir()
	ep, _ := json.Marshal(Endpoint{URL: "http://" + addr, PID: os.Getpid(), StartedAt: time.Now()})
	if err := os.WriteFile(filepath.Join(dir, endpointFile), ep, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "http-token"), []byte("secret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, token, ok, why := FindHub(context.Background(), dir); ok || token != "" || !strings.Contains(why, "belongs to another user") {
		t.Errorf("FindHub: ok %v, token %q, why %q; want no hub, no token", ok, token, why)
	}
}
