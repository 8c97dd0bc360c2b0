package testenv

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Prism starts Prism (@stoplight/prism-cli, pinned in testdata/npm), a real
// HTTP server that mocks the API doc describes and validates every request
// against it (a missing API key is 401, an argument the document does not
// allow 422, a multipart body without a required part 422), and returns its
// base URL (http://127.0.0.1:PORT). When the package is missing the test
// fails saying to run scripts/setup.sh. The server is stopped when the test
// ends.
func Prism(t testing.TB, doc string) string {
	t.Helper()
	cli := NPMPath(t, "@stoplight/prism-cli/dist/index.js")
	port := strconv.Itoa(FreePort(t))
	cmd := exec.Command(Node(t), cli, "mock", "--host", "127.0.0.1", "--port", port, doc)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Prism: %v", err)
	}
	var (
		mu   sync.Mutex
		tail []string // its last lines, for a failure
	)
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() { // read everything it prints, so it never blocks on a full pipe
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			tail = append(tail, line)
			if len(tail) > 20 {
				tail = tail[1:]
			}
			mu.Unlock()
			if strings.Contains(line, "Prism is listening on") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-done
	})
	wait := Timeout(20 * time.Second)
	select {
	case <-ready:
		return "http://127.0.0.1:" + port
	case <-done:
	case <-time.After(wait):
	}
	mu.Lock()
	defer mu.Unlock()
	t.Fatalf("Prism did not listen within %v; it printed:\n%s", wait, strings.Join(tail, "\n"))
	return ""
}
