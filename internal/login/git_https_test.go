package login

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"golang.org/x/oauth2"
)

// TestGitPushHTTPS: the real git pushes to and lists an https remote (git
// http-backend behind a TLS server in the test process that wants the
// sign-in's token as the Basic password) through GitEnv's helper; without
// the helper it cannot; when the server refuses a stored token, git's
// erase removes that sign-in.
func TestGitPushHTTPS(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed: install git (apt-get install git)")
		}
		t.Skip("git is not installed: install git (apt-get install git)")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(60*time.Second))
	defer cancel()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	baseEnv := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=", "GIT_CONFIG_COUNT=",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	git := func(env []string, dir string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, gitBin, args...)
		cmd.Dir = dir
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	must := func(dir string, args ...string) {
		t.Helper()
		if out, err := git(baseEnv, dir, args...); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	bare := filepath.Join(root, "srv", "stack.git")
	must(root, "init", "-q", "--bare", bare)
	must(bare, "config", "http.receivepack", "true")
	work := filepath.Join(root, "work")
	must(root, "init", "-q", work)
	if err := os.WriteFile(filepath.Join(work, "policy.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	must(work, "add", "policy.json")
	must(work, "commit", "-q", "-m", "stack")

	const token = "gho_HTTPSPushToken0123456789"
	var refused atomic.Int32
	backend := &cgi.Handler{Path: gitBin, Args: []string{"http-backend"}, Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(bare), "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pass, ok := r.BasicAuth(); !ok || pass != token {
			if ok {
				refused.Add(1)
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="stack"`)
			http.Error(w, "sign in", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ca := filepath.Join(root, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL)
	remote := srv.URL + "/stack.git"

	file := filepath.Join(root, "secrets.json")
	st := secret.Open(secret.Options{File: file, Keychain: noKeychain{}, Logger: slog.New(slog.DiscardHandler)})
	if err := Save(ctx, st, &Session{Host: u.Host, Issuer: "https://" + u.Host, Username: "oauth2", Token: &oauth2.Token{AccessToken: token}}); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	noHelper := append(baseEnv[:len(baseEnv):len(baseEnv)], "GIT_SSL_CAINFO="+ca)
	withHelper := append(append(noHelper[:len(noHelper):len(noHelper)], helperFileEnv+"="+file), GitEnv(exe)...)

	// Without the helper: refused, nothing pushed.
	if out, err := git(noHelper, work, "push", remote, "HEAD:refs/heads/main"); err == nil {
		t.Fatalf("git push without the helper succeeded:\n%s", out)
	}
	// With it: pushed, and listed.
	if out, err := git(withHelper, work, "push", remote, "HEAD:refs/heads/main"); err != nil {
		t.Fatalf("git push through the helper: %v\n%s", err, out)
	}
	head, _ := git(baseEnv, work, "rev-parse", "HEAD")
	if out, _ := git(baseEnv, bare, "rev-parse", "refs/heads/main"); out != head {
		t.Fatalf("the remote's main is %q, want the pushed %q", out, head)
	}
	out, err := git(withHelper, work, "ls-remote", remote)
	if err != nil || !strings.Contains(out, strings.TrimSpace(head)+"\trefs/heads/main") {
		t.Fatalf("git ls-remote through the helper = %v\n%s", err, out)
	}
	if strings.Contains(out, token) {
		t.Fatal("git printed the token")
	}

	// A token the server refuses: git says so and erases it, through the
	// helper, which removes the sign-in.
	if err := Save(ctx, st, &Session{Host: u.Host, Issuer: "https://" + u.Host, Username: "oauth2", Token: &oauth2.Token{AccessToken: "gho_RevokedToken0123456789"}}); err != nil {
		t.Fatal(err)
	}
	out, err = git(withHelper, work, "ls-remote", remote)
	if err == nil {
		t.Fatalf("git ls-remote with a refused token succeeded:\n%s", out)
	}
	if refused.Load() == 0 {
		t.Fatal("the server never saw the refused token")
	}
	if !strings.Contains(out, "refused the sign-in's token; it is removed") || strings.Contains(out, "gho_RevokedToken") {
		t.Errorf("git's output with a refused token:\n%s", out)
	}
	if _, err := Load(ctx, st, u.Host); !errors.Is(err, ErrNotSignedIn) {
		t.Errorf("after git erased the refused token, Load = %v, want ErrNotSignedIn", err)
	}
}
