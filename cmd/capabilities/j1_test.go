package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// J1 is the first journey of a person who already uses agents: their real
// Claude Code and Codex configs hold six MCP servers (written here by the
// real CLIs' own `mcp add`) and Claude Code a skill; `capabilities hub init
// --import`, in a terminal, starts them all, shows one review screen and
// asks once: the person presses Enter, and they are the hub's sources, each
// reviewed, and the skill the hub's. `capabilities hub connect` points both
// agents at the hub, and both real CLIs list capabilities (Claude Code
// starts the hub and does the MCP handshake). TestJ1 runs it, checks that
// the person was asked exactly once, and logs how long each step took and
// J1 from init --import to claude mcp list; BenchmarkJ1 times it with a
// binary built by go build. Times are reported, never asserted:
// BENCHMARKS.md records them.
//
//	go test ./cmd/capabilities -run '^TestJ1$' -count=1 -v
//	go test ./cmd/capabilities -run '^$' -bench '^BenchmarkJ1$' -benchtime 5x -count=1

// j1Step is the time one step took: wall-clock, and the CPU time (user +
// system) of its process and the descendants it waited for (the upstreams
// the hub started, the hub Claude Code started).
type j1Step struct {
	name      string // the command line, without paths
	metric    string // a short name for the benchmark's metrics
	wall, cpu time.Duration
}

func TestJ1(t *testing.T) {
	bin, err := exec.LookPath("capabilities") // the test binary, as testscript.Main put it on PATH
	if err != nil {
		t.Fatalf("the capabilities command is not on PATH: %v", err)
	}
	steps := j1(t, bin)
	var wall, cpu time.Duration
	for _, s := range steps {
		t.Logf("%-38s %6.2f s wall %6.2f s cpu", s.name, s.wall.Seconds(), s.cpu.Seconds())
		if s.metric == "codex-list" {
			t.Logf("%-38s %6.2f s wall %6.2f s cpu", "J1: init --import to claude mcp list", wall.Seconds(), cpu.Seconds())
		}
		wall += s.wall
		cpu += s.cpu
	}
	t.Logf("%-38s %6.2f s wall %6.2f s cpu", "J1 total (with codex mcp list)", wall.Seconds(), cpu.Seconds())
}

func BenchmarkJ1(b *testing.B) {
	testenv.RequireHarnesses(b)
	bin := filepath.Join(b.TempDir(), "capabilities")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	b.ResetTimer()
	sum := map[string]j1Step{}
	var order []string
	for i := 0; i < b.N; i++ {
		for _, s := range j1(b, bin) {
			if _, ok := sum[s.name]; !ok {
				order = append(order, s.name)
			}
			t := sum[s.name]
			t.metric = s.metric
			t.wall += s.wall
			t.cpu += s.cpu
			sum[s.name] = t
		}
	}
	var wall, cpu time.Duration
	for _, name := range order {
		s := sum[name]
		wall += s.wall
		cpu += s.cpu
		b.ReportMetric(s.wall.Seconds()/float64(b.N), "s-"+s.metric)
		b.ReportMetric(s.cpu.Seconds()/float64(b.N), "cpu-s-"+s.metric)
	}
	b.ReportMetric(wall.Seconds()/float64(b.N), "s-total")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s-total")
}

// j1 sets up the configs (not timed), then runs and times the journey's steps.
func j1(tb testing.TB, bin string) []j1Step {
	tb.Helper()
	// A benchmark's ns/op is the journey's steps alone, not the set-up.
	if b, ok := tb.(*testing.B); ok {
		b.StopTimer()
		defer b.StopTimer()
	}
	harnesses := testenv.RequireHarnesses(tb)
	node := testenv.Node(tb)
	nm := testenv.NPMPath(tb, "@modelcontextprotocol")
	scripted := filepath.Join(testenv.Root(tb), "testdata", "upstreams", "scripted.mjs")
	work := tb.TempDir()
	home := filepath.Join(work, "h")
	for _, d := range []string{home, filepath.Join(work, "docs"), filepath.Join(work, "notes"), filepath.Join(work, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	// Only what these commands need: none of the developer's agent
	// settings (CLAUDE_CONFIG_DIR, CODEX_HOME, API keys) reach them.
	env := append([]string{
		"PATH=" + strings.Join([]string{harnesses, filepath.Dir(node), filepath.Dir(bin), "/usr/bin", "/bin"}, string(os.PathListSeparator)),
		"HOME=" + home,
		"TMPDIR=" + filepath.Join(work, "tmp"),
		"CAPABILITIES_HOME=" + filepath.Join(work, "home"),
		"CAPABILITIES_CONNECT_TIMEOUT=" + testenv.Timeout(source.DefaultConnectTimeout).String(),
		"NO_KEYRING=1",
	}, testenv.HarnessEnv(testenv.Timeout(source.DefaultConnectTimeout))...)
	run := func(metric, name string, args ...string) (string, j1Step) {
		tb.Helper()
		prog := name
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(harnesses, name) // claude, codex
		}
		cmd := exec.Command(prog, args...)
		cmd.Dir = work
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		wall := time.Since(start)
		if err != nil {
			tb.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		st := cmd.ProcessState
		return stdout.String() + stderr.String(), j1Step{
			name:   filepath.Base(name) + " " + strings.Join(args, " "),
			metric: metric,
			wall:   wall,
			cpu:    st.UserTime() + st.SystemTime(),
		}
	}

	// The person's configs, written by the real CLIs: six servers, one of
	// them (memory) in both agents.
	memory := filepath.Join(nm, "server-memory", "dist", "index.js")
	filesystem := filepath.Join(nm, "server-filesystem", "dist", "index.js")
	run("", "claude", "mcp", "add", "--scope", "user", "memory", "-e", "MEMORY_FILE_PATH="+filepath.Join(work, "memory.jsonl"), "--", node, memory)
	run("", "claude", "mcp", "add", "--scope", "user", "everything", "--", node, filepath.Join(nm, "server-everything", "dist", "index.js"), "stdio")
	run("", "claude", "mcp", "add", "--scope", "user", "files", "--", node, filesystem, work)
	run("", "codex", "mcp", "add", "memory", "--env", "MEMORY_FILE_PATH="+filepath.Join(work, "memory.jsonl"), "--", node, memory)
	run("", "codex", "mcp", "add", "notes", "--env", "MEMORY_FILE_PATH="+filepath.Join(work, "notes", "notes.jsonl"), "--", node, "--no-warnings", memory)
	run("", "codex", "mcp", "add", "docs", "--", node, filesystem, filepath.Join(work, "docs"))
	run("", "codex", "mcp", "add", "scripted", "--", node, scripted)
	// And a skill in Claude Code's skills folder.
	skill := filepath.Join(home, ".claude", "skills", "pdf")
	if err := os.MkdirAll(skill, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: pdf\ndescription: Read PDF files\n---\nUse pdftotext.\n"), 0o600); err != nil {
		tb.Fatal(err)
	}

	if b, ok := tb.(*testing.B); ok {
		b.StartTimer()
	}
	var steps []j1Step
	// init --import in a terminal: the person reads the one screen and
	// presses Enter.
	cmd := exec.Command(bin, "hub", "init", "--import")
	cmd.Dir, cmd.Env = work, env
	tty, term := openPTY(tb)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term, term, term
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	term.Close()
	var shown testenv.Buffer
	go func() { _, _ = io.Copy(&shown, tty) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	screen := regexp.MustCompile(`\[Enter\] accept all   \[e\] adjust each   \[q\] quit without changes: $`)
	deadline := time.Now().Add(testenv.Timeout(5 * time.Minute))
	for !screen.MatchString(shown.String()) {
		select {
		case err := <-done:
			tb.Fatalf("init --import ended before its review screen asked (%v):\n%s", err, shown.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			tb.Fatalf("init --import did not show its review screen:\n%s", shown.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := tty.Write([]byte("\r")); err != nil {
		tb.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			tb.Fatalf("init --import: %v\n%s", err, shown.String())
		}
	case <-time.After(testenv.Timeout(5 * time.Minute)):
		_ = cmd.Process.Kill()
		tb.Fatalf("init --import did not end after Enter:\n%s", shown.String())
	}
	st := cmd.ProcessState
	steps = append(steps, j1Step{name: "capabilities hub init --import (Enter)", metric: "init-import", wall: time.Since(start), cpu: st.UserTime() + st.SystemTime()})
	out := shown.String()
	if n := len(regexp.MustCompile(`\[(y/N|Y/n|Enter)\]`).FindAllString(out, -1)); n != 1 {
		tb.Errorf("init --import asked %d times, want once (one screen):\n%s", n, out)
	}
	for _, want := range []string{`Review: 6 server\(s\) to add with \d+ tool\(s\), 1 skill\(s\) to import`, `Imported 6 server\(s\)`, `Imported the skill pdf from`} {
		if !regexp.MustCompile(want).MatchString(out) {
			tb.Fatalf("init --import: no match for %s:\n%s", want, out)
		}
	}
	out, s := run("review", bin, "hub", "review")
	if !strings.Contains(out, "Nothing to review.") {
		tb.Fatalf("after init --import something awaits review:\n%s", out)
	}
	_ = s
	out, s = run("connect", bin, "hub", "connect")
	steps = append(steps, s)
	for _, want := range []string{`(?m)^claude-code: .* changed$`, `(?m)^codex: .* changed$`} {
		if !regexp.MustCompile(want).MatchString(out) {
			tb.Fatalf("connect: no line matching %s:\n%s", want, out)
		}
	}
	out, s = run("claude-list", "claude", "mcp", "list")
	steps = append(steps, s)
	if !regexp.MustCompile(`(?m)^capabilities: \S+ hub serve --stdio --profile default - ✔ Connected$`).MatchString(out) {
		tb.Fatalf("claude mcp list does not show capabilities connected:\n%s", out)
	}
	// The hub is work/home, not ~/.capabilities: the entry carries
	// CAPABILITIES_HOME, which Codex lists (its value masked).
	out, s = run("codex-list", "codex", "mcp", "list")
	steps = append(steps, s)
	if !regexp.MustCompile(`(?m)^capabilities +\S+ +hub serve --stdio --profile default +CAPABILITIES_HOME=\*+ +- +enabled `).MatchString(out) {
		tb.Fatalf("codex mcp list does not show capabilities enabled, with CAPABILITIES_HOME in its env:\n%s", out)
	}
	return steps
}
