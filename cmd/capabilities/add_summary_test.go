package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestAddSummarizesALargeSource: `hub add` of GitHub's REST description
// (about 1,200 operations) printed every tool twice, in the proposal and
// in the review (≈2,470 lines). It prints the counts by kind, the first
// 20 tools and how to see the rest, and a review of counts; --verbose
// lists every tool, once.
func TestAddSummarizesALargeSource(t *testing.T) {
	doc := testenv.LargeNPMPath(t, "@octokit/openapi/generated/api.github.com.json")
	e := newCLIEnv(t)
	out := runLong(t, e, "hub", "add", "--yes", "--namespace", "github", doc)
	m := regexp.MustCompile(`(?m)^  tools: (\d+) \((\d+) read-only, (\d+) write, (\d+) destructive, by annotation\)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no count of the tools by kind:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	if n < 1000 {
		t.Fatalf("%d tools, want GitHub's 1,000 and more", n)
	}
	if got := len(toolLines(out)); got != 20 {
		t.Errorf("%d tools listed, want the first 20:\n%s", got, out)
	}
	if want := "    … " + strconv.Itoa(n-20) + " more: capabilities hub describe github (or hub add --verbose)\n"; !strings.Contains(out, want) {
		t.Errorf("no line saying how to see the rest (%q):\n%s", want, out)
	}
	for _, want := range []string{"Read-only (proposed: allow): " + m[2] + "\n", "Writes (proposed: ask): " + m[3] + "\n", "Destructive or unannotated (proposed: ask): " + m[4] + "\n", "Reviewed " + m[1] + " tool(s)."} {
		if !strings.Contains(out, want) {
			t.Errorf("the review does not say %q:\n%s", want, out)
		}
	}
	if lines := strings.Count(out, "\n"); lines > 60 {
		t.Errorf("hub add printed %d lines:\n%s", lines, out)
	}

	e.run("", "hub", "remove", "github")
	out = runLong(t, e, "hub", "add", "--yes", "--verbose", "--namespace", "github", doc)
	listed := toolLines(out)
	seen := map[string]int{}
	for _, l := range listed {
		seen[strings.Fields(l)[0]]++
	}
	if len(listed) != n || len(seen) != n {
		t.Errorf("--verbose listed %d lines of %d tools, want each of the %d once", len(listed), len(seen), n)
	}
	if strings.Contains(out, " more: capabilities hub describe") {
		t.Errorf("--verbose still says there are more")
	}
}

// runLong runs a command that must succeed, for longer than run's bound:
// reading GitHub's 13 MB description takes a while on a loaded machine.
func runLong(t *testing.T, e *cliEnv, args ...string) string {
	t.Helper()
	cmd := e.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("capabilities %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
	case <-time.After(testenv.Timeout(2 * time.Minute)):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("capabilities %s: still running; killed", strings.Join(args, " "))
	}
	return out.String()
}

// toolLines are the lines of add's output that name a tool of github.
func toolLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "github.") {
			lines = append(lines, l)
		}
	}
	return lines
}
