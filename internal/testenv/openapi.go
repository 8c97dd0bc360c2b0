package testenv

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// PetstoreAPI starts testdata/openapi/petstore-server.mjs, a small HTTP API
// serving its own OpenAPI document at /openapi.json, and returns its base
// URL (http://127.0.0.1:PORT). env adds variables (REDIRECT_TO). The server
// is stopped when the test ends.
func PetstoreAPI(t testing.TB, env ...string) string {
	t.Helper()
	cmd := exec.Command(Node(t), Root(t)+"/testdata/openapi/petstore-server.mjs")
	cmd.Env = append(cmd.Environ(), append([]string{"PORT=0"}, env...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the Petstore API: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	wait := Timeout(15 * time.Second)
	select {
	case s := <-line:
		port, ok := strings.CutPrefix(strings.TrimSpace(s), "listening ")
		if !ok {
			t.Fatalf("the Petstore API printed %q instead of its port", s)
		}
		return "http://127.0.0.1:" + port
	case <-time.After(wait):
		t.Fatalf("the Petstore API did not listen within %v", wait)
	}
	return ""
}
