package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkShim8Sessions19Sources: 8 concurrent agent sessions, each a
// `hub serve --stdio` process driven by a go-sdk client, over 19 sources
// (scripted.mjs under 19 namespaces). Each session first runs code calling
// every source once (so each starts what it would start), then 20 executes
// of one upstream call each. With "long-running-hub" a `serve --http` runs on
// the same home and the stdio processes are shims; with "own-engines" there
// is none. The 1-session runs show the relay's cost without contention. Reported, not asserted: the upstream processes running under the
// hub's and the sessions' processes, their total RSS (hub, stdio processes
// and upstreams, from /proc), and the median over sessions of each session's
// p50 execute latency; and the slowest session's first execute (the one
// calling all 19 sources, which starts them). With BENCH_DESKTOP_APP, the
// desktop app is the long-running hub too ("desktop-app").
func BenchmarkShim8Sessions19Sources(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc (Linux) to count processes and RSS")
	}
	h := newHub(b)
	var ns []string
	for i := range 19 {
		n := fmt.Sprintf("src%02d", i)
		h.cli(append([]string{"hub", "add", "--yes", "--namespace", n, "--env", "SCRIPTED_NAME=" + n, "--"}, testenv.Scripted(b)...)...)
		ns = append(ns, n)
	}
	// Without a hub first: the long-running one stays up until the end.
	b.Run("8-sessions/own-engines", func(b *testing.B) { shimBench(b, h, ns, 8, false) })
	b.Run("1-session/own-engine", func(b *testing.B) { shimBench(b, h, ns, 1, false) })
	b.Run("8-sessions/long-running-hub", func(b *testing.B) { shimBench(b, h, ns, 8, true) })
	b.Run("1-session/long-running-hub", func(b *testing.B) { shimBench(b, h, ns, 1, true) })
	// The desktop app as the long-running hub (it serves the same MCP
	// server): run inside testdata/tools/desktop/with-desktop-session.sh
	// with BENCH_DESKTOP_APP=<path of capabilities-desktop>.
	if app := os.Getenv("BENCH_DESKTOP_APP"); app != "" {
		h.stopHub()
		h.serveApp(app)
		b.Run("8-sessions/desktop-app", func(b *testing.B) { shimBench(b, h, ns, 8, true) })
		b.Run("1-session/desktop-app", func(b *testing.B) { shimBench(b, h, ns, 1, true) })
	}
}

// shimBench runs the scenario once and reports its figures.
func shimBench(b *testing.B, h *hubEnv, namespaces []string, sessions int, withHub bool) {
	var roots []int
	if _, err := os.Stat(filepath.Join(h.home, "hub", "endpoint.json")); withHub && err != nil {
		h.serveHTTP()
	}
	if withHub {
		pid, err := announcedPID(h)
		if err != nil {
			b.Fatal(err)
		}
		roots = append(roots, pid)
	}
	var calls []string
	for _, n := range namespaces {
		calls = append(calls, fmt.Sprintf("%s.echo({message: %q})", n, n))
	}
	warm := "return await Promise.all([" + strings.Join(calls, ", ") + "])"
	ctx := context.Background()
	p50s := make([]float64, sessions)
	firsts := make([]float64, sessions)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var cleanups []func()
	ready := make(chan struct{})
	for i := range sessions {
		cmd := exec.Command(binPath, "hub", "serve", "--stdio")
		cmd.Env = h.env()
		cmd.Stderr = os.Stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatalf("session %d: %v", i, err)
		}
		roots = append(roots, cmd.Process.Pid)
		cleanups = append(cleanups, func() { _ = cs.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			exec := func(code string) time.Duration {
				start := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": code}})
				if err != nil || res.IsError {
					b.Errorf("session %d: execute: %v %+v", i, err, res)
				}
				return time.Since(start)
			}
			first := exec(warm)
			mu.Lock()
			firsts[i] = float64(first.Milliseconds())
			mu.Unlock()
			<-ready
			var ds []time.Duration
			for j := range 20 {
				ds = append(ds, exec(fmt.Sprintf(`return await %s.echo({message: "hi %d"})`, namespaces[(i+j)%len(namespaces)], j)))
			}
			sort.Slice(ds, func(a, c int) bool { return ds[a] < ds[c] })
			mu.Lock()
			p50s[i] = float64(ds[len(ds)/2].Microseconds()) / 1000
			mu.Unlock()
		}()
	}
	close(ready)
	wg.Wait()
	procs, upstreams, rss := processTree(b, roots)
	for _, c := range cleanups {
		c()
	}
	sort.Float64s(p50s)
	sort.Float64s(firsts)
	b.ReportMetric(firsts[len(firsts)-1], "slowest-first-execute-ms")
	b.ReportMetric(float64(upstreams), "upstreams")
	b.ReportMetric(float64(procs), "processes")
	b.ReportMetric(float64(rss)/1024, "total-RSS-MB")
	b.ReportMetric(p50s[len(p50s)/2], "p50-execute-ms")
	b.ReportMetric(p50s[len(p50s)-1], "worst-session-p50-ms")
}

func announcedPID(h *hubEnv) (int, error) {
	b, err := os.ReadFile(filepath.Join(h.home, "hub", "endpoint.json"))
	if err != nil {
		return 0, err
	}
	i := strings.Index(string(b), `"pid":`)
	if i < 0 {
		return 0, fmt.Errorf("no pid in %s", b)
	}
	rest := string(b[i+len(`"pid":`):])
	end := strings.IndexAny(rest, ",}")
	return strconv.Atoi(strings.TrimSpace(rest[:end]))
}

// processTree walks /proc: the processes under roots (roots included), how
// many of them run scripted.mjs, and their total RSS in KB.
func processTree(tb testing.TB, roots []int) (procs, upstreams int, rssKB int64) {
	tb.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		tb.Fatal(err)
	}
	parent := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(st)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 {
			parent[pid], _ = strconv.Atoi(f[1])
		}
	}
	in := map[int]bool{}
	for _, r := range roots {
		in[r] = true
	}
	for changed := true; changed; {
		changed = false
		for pid, pp := range parent {
			if !in[pid] && in[pp] {
				in[pid], changed = true, true
			}
		}
	}
	for pid := range in {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		procs++
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				rssKB += kb
			}
		}
		if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(cmd), "scripted.mjs") {
			upstreams++
		}
	}
	return procs, upstreams, rssKB
}

// stopHub stops the long-running hub announced in the home, if any, and
// waits for its announcement to go.
func (h *hubEnv) stopHub() {
	h.t.Helper()
	pid, err := announcedPID(h)
	if err != nil {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Signal(os.Interrupt)
	}
	deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
	for {
		if _, err := os.Stat(filepath.Join(h.home, "hub", "endpoint.json")); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the hub (pid %d) did not stop", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serveApp starts the desktop app at bin on the home and waits until it
// announces its MCP endpoint.
func (h *hubEnv) serveApp(bin string) {
	h.t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(h.env(), "NO_KEYRING=1")
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("starting the desktop app: %v", err)
	}
	h.t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
	for {
		if pid, err := announcedPID(h); err == nil && pid == cmd.Process.Pid {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the desktop app %s did not announce its endpoint", bin)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
