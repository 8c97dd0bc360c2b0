package e2e

import (
	"context"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeSaysItsHubIsGone: the hub's folder moved away, moved back,
// deleted, then set up again while `hub serve` serves it (stdio and HTTP).
// Every call is answered with what happened to which folder and what the
// person does (not a failure on a file that is gone), stderr says it once
// per change, and the hub moved back is served again.
func TestServeSaysItsHubIsGone(t *testing.T) {
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			must := func(t *testing.T, err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			h := newHub(t)
			dir := filepath.Join(h.home, "hub")
			ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
			defer cancel()
			stderr := &testenv.Buffer{}
			var transport mcp.Transport
			if mode == "stdio" {
				cmd := exec.Command(binPath, "hub", "serve", "--stdio", "--no-shim")
				cmd.Env = h.env()
				cmd.Stderr = stderr
				transport = &mcp.CommandTransport{Command: cmd}
			} else {
				var url, token string
				url, token, stderr = h.serveHTTPLogged()
				transport = &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, DisableStandaloneSSE: true}
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "gone", Version: "1"}, nil).Connect(ctx, transport, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			execute := func() (string, bool) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"code": "return 6 * 7"}})
				if err != nil {
					t.Fatalf("execute: %v", err)
				}
				var text string
				for _, c := range res.Content {
					if tc, ok := c.(*mcp.TextContent); ok {
						text += tc.Text
					}
				}
				return text, res.IsError
			}
			// until calls execute until its answer is an error holding want
			// (or, want empty, a value again).
			until := func(want string) string {
				t.Helper()
				wait := testenv.Timeout(30 * time.Second)
				for deadline := time.Now().Add(wait); ; time.Sleep(100 * time.Millisecond) {
					text, isErr := execute()
					if want == "" && !isErr && strings.Contains(text, "42") || want != "" && isErr && strings.Contains(text, want) {
						return text
					}
					if time.Now().After(deadline) {
						t.Fatalf("after %v execute still answers (error %v) %q; want %q\nstderr:\n%s", wait, isErr, text, want, stderr.String())
					}
				}
			}
			until("")

			must(t, os.Rename(dir, dir+"-away"))
			text := until("was deleted or moved away")
			for _, w := range []string{"the hub at " + dir + " was deleted or moved away while `capabilities hub serve` served it", "run `capabilities hub init`"} {
				if !strings.Contains(text, w) {
					t.Errorf("the answer %q does not say %q", text, w)
				}
			}
			if err := os.Rename(dir+"-away", dir); err != nil {
				// Something made the folder again while it was away: a
				// person's move back fails the same way.
				var made []string
				_ = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, _ error) error {
					made = append(made, strings.TrimPrefix(p, dir))
					return nil
				})
				t.Fatalf("moving the hub back: %v; while it was away the folder was made again, holding %q\nstderr:\n%s", err, made, stderr.String())
			}
			until("")

			// Deleted as a person deletes it (a file manager's trash, rm
			// of a renamed folder): moved away in one step, then removed.
			// serve may be writing a record as the folder goes (one run of
			// three failed "unlinkat …/hub/runs: directory not empty" when
			// RemoveAll raced such a write): once renamed, a write by the
			// hub's path no longer reaches it, so nothing fills it while
			// it is removed.
			must(t, os.Rename(dir, dir+"-deleted"))
			must(t, os.RemoveAll(dir+"-deleted"))
			until("was deleted or moved away")
			h.cli("hub", "init")
			text = until("was replaced by another hub")
			if !strings.Contains(text, "restart") {
				t.Errorf("the answer %q does not say to restart serve", text)
			}
			cs.Close()
			// serve says it on stderr as it answers: the last line may come
			// a moment after the answer the client read.
			for _, w := range []string{"capabilities: the hub at " + dir + " was deleted or moved away", "capabilities: the hub at " + dir + " is back: serving it again", "capabilities: the hub at " + dir + " was replaced by another hub"} {
				deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
				for !strings.Contains(stderr.String(), w) && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				if got := stderr.String(); !strings.Contains(got, w) {
					t.Errorf("stderr does not say %q:\n%s", w, got)
				}
			}
		})
	}
}
