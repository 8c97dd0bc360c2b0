//go:build linux

package pgfaults

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// cluster is a hub on one PostgreSQL database served by several `hub serve
// --http` processes, each with a CAPABILITIES_HOME of its own (as on as many
// machines) and a port of its own, kept across restarts.
type cluster struct {
	t     testing.TB
	db    string // the store URL
	work  string
	homes []string
	ports []int

	mu     sync.Mutex
	procs  []*proc // nil while process i is down
	gens   []int   // how many times process i was started
	kills  int
	logs   []*testenv.Buffer // every process's stderr, in start order
	tokens []string
}

type proc struct {
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *testenv.Buffer
}

// hubCLI runs the capabilities binary on the database with home, and fails
// the test when it fails.
func hubCLI(t testing.TB, db, home string, args ...string) string {
	t.Helper()
	out, err := hubCLIErr(db, home, args...)
	if err != nil {
		t.Fatalf("capabilities %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func hubCLIErr(db, home string, args ...string) (string, error) {
	cmd := exec.Command(binPath, args...)
	cmd.Env = hubEnv(db, home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func hubEnv(db, home string) []string {
	return append(os.Environ(), "CAPABILITIES_HOME="+home, "CAPABILITIES_STORE="+db, "CAPABILITIES_NO_BROWSER=1", "CAPABILITIES_NO_SHIM=1")
}

// newCluster makes the hub on db (hub init, the upstream as namespace up,
// its record tool allowed by a rule so that a write does not ask) and
// starts n serve processes.
func newCluster(t testing.TB, db string, up *upstream, n int) *cluster {
	t.Helper()
	c := &cluster{t: t, db: db, work: t.TempDir()}
	for i := range n {
		c.homes = append(c.homes, filepath.Join(c.work, "home"+strconv.Itoa(i)))
		c.ports = append(c.ports, testenv.FreePort(t))
	}
	c.procs = make([]*proc, n)
	c.gens = make([]int, n)
	c.tokens = make([]string, n)
	hubCLI(t, db, c.homes[0], "hub", "init")
	hubCLI(t, db, c.homes[0], "hub", "add", "--yes", "--namespace", "up", up.URL)
	hubCLI(t, db, c.homes[0], "hub", "policy", "set", "up.record", "allow")
	t.Cleanup(c.stopAll)
	for i := range n {
		if err := c.start(i); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c *cluster) url(i int) string { return "http://127.0.0.1:" + strconv.Itoa(c.ports[i]) + "/mcp" }

// start starts process i and waits until it is ready (/readyz 200, its
// token written).
func (c *cluster) start(i int) error {
	cmd := exec.Command(binPath, "hub", "serve", "--http", "--port", strconv.Itoa(c.ports[i]))
	cmd.Env = hubEnv(c.db, c.homes[i])
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting hub serve --http: %w", err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), stderr: stderr}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.mu.Lock()
	c.logs = append(c.logs, stderr)
	c.mu.Unlock()
	ready := "http://127.0.0.1:" + strconv.Itoa(c.ports[i]) + "/readyz"
	wait := testenv.Timeout(20 * time.Second)
	deadline := time.Now().Add(wait)
	hc := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-p.done:
			return fmt.Errorf("hub serve --http %d exited at start: %v\n%s", i, cmd.ProcessState, stderr)
		default:
		}
		if resp, err := hc.Get(ready); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-p.done
			return fmt.Errorf("hub serve --http %d was not ready within %v\n%s", i, wait, stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tok, err := os.ReadFile(filepath.Join(c.homes[i], "hub", "http-token"))
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.procs[i] = p
	c.gens[i]++
	c.tokens[i] = strings.TrimSpace(string(tok))
	c.mu.Unlock()
	return nil
}

// up reports whether process i runs, and its generation.
func (c *cluster) up(i int) (bool, int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[i] != nil, c.gens[i], c.tokens[i]
}

// gen is how many times process i was started, or 0 while it is down.
func (c *cluster) gen(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.procs[i] == nil {
		return 0
	}
	return c.gens[i]
}

// kill ends process i with SIGKILL and waits until it is gone.
func (c *cluster) kill(i int) {
	c.mu.Lock()
	p := c.procs[i]
	c.procs[i] = nil
	if p != nil {
		c.kills++
	}
	c.mu.Unlock()
	if p == nil {
		return
	}
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// pid is process i's, or 0.
func (c *cluster) pid(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.procs[i] == nil {
		return 0
	}
	return c.procs[i].cmd.Process.Pid
}

// ensureUp starts every process that is down.
func (c *cluster) ensureUp() {
	c.t.Helper()
	for i := range c.procs {
		if ok, _, _ := c.up(i); !ok {
			if err := c.start(i); err != nil {
				c.t.Fatal(err)
			}
		}
	}
}

// stopAll interrupts the processes and waits for them.
func (c *cluster) stopAll() {
	for i := range c.procs {
		c.mu.Lock()
		p := c.procs[i]
		c.procs[i] = nil
		c.mu.Unlock()
		if p == nil {
			continue
		}
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(testenv.Timeout(10 * time.Second)):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// panics returns the stderr of every process that printed a Go panic.
func (c *cluster) panics() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.logs {
		if s := l.String(); strings.Contains(s, "panic:") || strings.Contains(s, "fatal error:") {
			out = append(out, s)
		}
	}
	return out
}

// killLoop kills a random running process with SIGKILL every interval
// (±50%; never the last one running) and starts it again half a second
// later or less, until ctx is done.
func (c *cluster) killLoop(ctx context.Context, every time.Duration, pick func(n int) int, jitter func(time.Duration) time.Duration) error {
	var (
		restarts sync.WaitGroup
		mu       sync.Mutex
		errs     []error
	)
	defer restarts.Wait()
	for {
		select {
		case <-ctx.Done():
			restarts.Wait()
			mu.Lock()
			defer mu.Unlock()
			return errors.Join(errs...)
		case <-time.After(every/2 + jitter(every)):
		}
		var live []int
		for i := range c.procs {
			if ok, _, _ := c.up(i); ok {
				live = append(live, i)
			}
		}
		if len(live) < 2 {
			continue
		}
		i := live[pick(len(live))]
		c.kill(i)
		restarts.Go(func() {
			time.Sleep(jitter(500 * time.Millisecond))
			err := c.start(i)
			if err != nil {
				err = errors.Join(err, c.start(i)) // once more: the port may have been a moment's client's
			}
			if err != nil && c.pid(i) == 0 {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
}
