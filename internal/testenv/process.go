package testenv

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"testing"
	"time"
)

// startJSONProcess starts cmd, a test server that prints one JSON line
// when ready, and decodes that line into v. The process's stdin is a pipe
// closed when the test ends (so a script that exits at the end of its
// input does not outlive a killed test binary); the process is killed then
// too, and its stderr logged if the test failed. what names the server in
// messages.
func startJSONProcess(t testing.TB, what string, cmd *exec.Cmd, v any) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", what, err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && stderr.String() != "" {
			t.Logf("%s's stderr:\n%s", what, stderr.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			line <- s.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case l := <-line:
		if err := json.Unmarshal([]byte(l), v); err != nil {
			t.Fatalf("reading %s's address %q: %v", what, l, err)
		}
	case <-time.After(Timeout(20 * time.Second)):
		t.Fatalf("%s did not start: %s", what, stderr.String())
	}
}
