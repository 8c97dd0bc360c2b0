package login

// A sign-in kept in a real Secret Service (gnome-keyring-daemon on a private
// D-Bus session bus, testdata/tools/desktop/with-desktop-session.sh), as
// engine/secret's keychain tests do: the test re-executes itself inside the
// throwaway session.

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"golang.org/x/oauth2"
)

const innerEnv = "CAPABILITIES_LOGIN_TEST_INNER"

func TestKeychainSignIn(t *testing.T) {
	if os.Getenv(innerEnv) == "" {
		for _, tool := range []string{"Xvfb", "dbus-run-session", "gnome-keyring-daemon", "secret-tool", "xdotool", "git"} {
			if _, err := exec.LookPath(tool); err != nil {
				msg := tool + " not found: install the Debian packages: apt-get install -y --no-install-recommends xvfb xauth dbus dbus-x11 gnome-keyring libsecret-tools xdotool git (scripts/setup.sh installs them)"
				if os.Getenv("CI") == "true" {
					t.Fatal(msg)
				}
				t.Skip(msg)
			}
		}
		script := testenv.Tool(t, "desktop/with-desktop-session.sh")
		ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(90*time.Second))
		defer cancel()
		cmd := exec.CommandContext(ctx, script, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1", "-test.timeout=80s")
		cmd.Env = append(os.Environ(), innerEnv+"=1", "TEST_HOME="+t.TempDir(), "NO_TRAY_HOST=1", "NO_NOTIFYD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
			t.Fatalf("%s in a desktop session failed: %v\n%s", t.Name(), err, out)
		}
		return
	}
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "hub", "secrets.json")
	st := secret.Open(secret.Options{File: file, Logger: slog.New(slog.DiscardHandler)})
	if s := st.Status(); s.Backend != secret.BackendKeychain {
		t.Fatalf("Status = %+v, want the keychain", s)
	}
	const token = "gho_KeychainLoginToken0123456789"
	if err := Save(ctx, st, &Session{Host: "github.com", Issuer: GitHubIssuer, ClientID: "cid", Username: "x-access-token", Token: &oauth2.Token{AccessToken: token, TokenType: "bearer"}}); err != nil {
		t.Fatal(err)
	}
	// In the Secret Service, under the service and login/<host>.
	out, err := exec.Command("secret-tool", "lookup", "service", secret.Service, "username", "login/github.com").Output()
	if err != nil {
		t.Fatalf("secret-tool lookup: %v", err)
	}
	var stored Session
	if err := json.Unmarshal(out, &stored); err != nil || stored.Token == nil || stored.Token.AccessToken != token {
		t.Fatalf("the Secret Service holds no sign-in with the token (%v)", err)
	}
	if _, err := os.Stat(file); err == nil {
		t.Errorf("the fallback file %s was written with a working keychain", file)
	}
	// The real git, through GitEnv, gets it from the keychain.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "credential", "fill")
	cmd.Stdin = strings.NewReader("url=https://github.com/me/stack.git\n\n")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", helperFileEnv+"="+file, helperKeychainEnv+"=1", "GIT_CONFIG_COUNT=")
	cmd.Env = append(cmd.Env, GitEnv(exe)...)
	fill, err := cmd.Output()
	if err != nil || !strings.Contains(string(fill), "password="+token+"\n") {
		t.Fatalf("git credential fill = %q, %v; want the token from the keychain", fill, err)
	}
	if err := Delete(ctx, st, "github.com"); err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command("secret-tool", "lookup", "service", secret.Service, "username", "login/github.com").Output(); len(out) != 0 {
		t.Fatal("the Secret Service still holds the sign-in after Delete")
	}
}
