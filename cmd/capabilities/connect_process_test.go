package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/fsnotify/fsnotify"
)

// The tests here run connect as a person runs a release: a binary built
// from this package (not the test binary), under the name a release
// download has.

// release is a HOME and a hub driven by a binary built from this
// package, named as a release download is (capabilities_linux_amd64).
type release struct {
	t             *testing.T
	bin           string
	home, hubHome string
}

func newRelease(t *testing.T, home string) *release {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "capabilities_linux_amd64")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return &release{t: t, bin: bin, home: home, hubHome: filepath.Join(t.TempDir(), "hub")}
}

// agentHome is a HOME with one config of each harness connect writes,
// each with a server of the person's: path → bytes.
func agentHome(t *testing.T) (home string, files map[string]string) {
	t.Helper()
	home = t.TempDir()
	server := `{"command": "node", "args": ["server.js"]}`
	files = map[string]string{
		".claude.json": "{\n  \"numStartups\": 2,\n  \"mcpServers\": {\n    \"mine\": " + server + "\n  }\n}\n",
		".config/Claude/claude_desktop_config.json": "{\"mcpServers\": {\"mine\": " + server + "}}",
		".codex/config.toml":                        "model = \"o3\"\n\n[mcp_servers.mine]\ncommand = \"node\"\nargs = [\"server.js\"]\n",
		".cursor/mcp.json":                          "{\n  \"mcpServers\": {\n    \"mine\": " + server + ",\n  }\n}\n",
		".gemini/settings.json":                     "{\n  // mine\n  \"mcpServers\": {\"mine\": " + server + "}\n}\n",
		".codeium/windsurf/mcp_config.json":         "{\n\t\"mcpServers\": {\n\t\t\"mine\": " + server + "\n\t}\n}\n",
		".config/Code/User/mcp.json":                "{\n  \"servers\": {\n    \"mine\": " + server + "\n  }\n}\n",
		".config/zed/settings.json":                 "{\n  \"theme\": \"One Dark\",\n  \"context_servers\": {}\n}\n",
	}
	writeAll(t, home, files)
	return home, files
}

func writeAll(t *testing.T, home string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// changed lists the files that no longer hold their bytes.
func changed(t *testing.T, home string, files map[string]string) []string {
	t.Helper()
	var out []string
	for rel, body := range files {
		b, err := os.ReadFile(filepath.Join(home, rel))
		if err != nil || string(b) != body {
			out = append(out, rel)
		}
	}
	return out
}

// command is the release binary with args, HOME and the hub.
func (r *release) command(args ...string) *exec.Cmd {
	cmd := exec.Command(r.bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+r.home, "XDG_CONFIG_HOME="+filepath.Join(r.home, ".config"), "CAPABILITIES_HOME="+r.hubHome, "NO_KEYRING=1")
	return cmd
}

// run runs it to its end (within the bound): its output and error.
func (r *release) run(args ...string) (string, error) {
	r.t.Helper()
	cmd := r.command(args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	err := waitBounded(cmd)
	return out.String(), err
}

// TestConnectWithAReleaseBinary: a binary not named capabilities (a
// release download) writes its entry, finds it again (a second connect
// changes nothing) and takes it out (disconnect gives back every byte).
func TestConnectWithAReleaseBinary(t *testing.T) {
	home, files := agentHome(t)
	r := newRelease(t, home)
	if out, err := r.run("hub", "init"); err != nil {
		t.Fatalf("hub init: %v\n%s", err, out)
	}
	out, err := r.run("hub", "connect")
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, out)
	}
	if got := changed(t, home, files); len(got) != len(files) {
		t.Fatalf("connect changed %v, want every file:\n%s", got, out)
	}
	b, _ := os.ReadFile(filepath.Join(home, ".claude.json"))
	if !strings.Contains(string(b), `"command": "`+r.bin+`"`) {
		t.Fatalf("the entry does not run the release binary:\n%s", b)
	}
	out, err = r.run("hub", "connect")
	if err != nil || strings.Contains(out, "kept as it is") || strings.Contains(out, " changed\n") {
		t.Fatalf("connect again: %v, want every file unchanged:\n%s", err, out)
	}
	out, err = r.run("hub", "disconnect")
	if err != nil || strings.Contains(out, "left: its own") {
		t.Fatalf("disconnect: %v, want the hub's entries taken out:\n%s", err, out)
	}
	if got := changed(t, home, files); len(got) > 0 {
		t.Errorf("after disconnect these files differ from before connect: %v\n%s", got, out)
	}
}

// TestRollbackAfterConnectIsKilled: connect killed (SIGKILL) while it
// writes the agents' configs, after its k-th write (k random, seen as the
// file renamed into place), leaves some written, some not: a plain
// rollback, without --force, gives back every file's bytes.
func TestRollbackAfterConnectIsKilled(t *testing.T) {
	home, files := agentHome(t)
	r := newRelease(t, home)
	const trials = 24
	mixed := map[int]int{} // files written when killed → trials
	for trial := range trials {
		k := 1 + rand.IntN(len(files)-1)
		written, out, err := r.killAfterWrites(files, k)
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, out)
		}
		mixed[len(written)]++
		if len(written) == 0 {
			continue
		}
		out, err = r.run("rollback")
		if err != nil {
			t.Fatalf("trial %d (killed after %d of %d files: %v): rollback: %v\n%s", trial, len(written), len(files), written, err, out)
		}
		if got := changed(t, home, files); len(got) > 0 {
			t.Fatalf("trial %d: rollback left these files changed: %v\n%s", trial, got, out)
		}
		writeAll(t, home, files) // as before, to the byte and the mode
	}
	t.Logf("files written when connect was killed → trials: %v", mixed)
}

// killAfterWrites starts connect and kills it once k of the configs were
// renamed into place (or it ends first); it returns the configs that
// changed.
func (r *release) killAfterWrites(files map[string]string, k int) ([]string, string, error) {
	t, home := r.t, r.home
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, "", err
	}
	defer w.Close()
	names := map[string]bool{}
	for rel := range files {
		p := filepath.Join(home, rel)
		names[p] = true
		if err := w.Add(filepath.Dir(p)); err != nil {
			return nil, "", err
		}
	}
	cmd := r.command("hub", "connect")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	seen := 0
	for seen < k {
		select {
		case ev := <-w.Events:
			if names[ev.Name] && ev.Has(fsnotify.Create) {
				seen++
			}
			continue
		case err := <-w.Errors:
			return nil, "", err
		case err := <-done:
			done <- err
		}
		break
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	err = <-done
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, out.String(), err
	}
	return changed(t, home, files), out.String(), nil
}

// keychainHint says how to install what a throwaway keychain needs.
const keychainHint = "install the Debian packages: apt-get install -y --no-install-recommends xvfb xauth dbus dbus-x11 gnome-keyring libsecret-tools xdotool (scripts/setup.sh installs them)"

// TestSnapshotSecretsInTheKeychain: with the OS keychain (gnome-keyring on
// a throwaway session bus), import moves a token of ~/.claude.json into it,
// and connect --replace, disconnect and connect again snapshot the file:
// nothing in the hub's folder holds the token (nor Claude Code's own API
// key) in any form, and three rollbacks give back every byte. Without the
// session's tools the test fails in CI (CI=true), saying what to install,
// and is skipped elsewhere.
func TestSnapshotSecretsInTheKeychain(t *testing.T) {
	for _, tool := range []string{"Xvfb", "dbus-run-session", "dbus-send", "gnome-keyring-daemon", "xdotool"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found: %s", tool, keychainHint)
			}
			t.Skipf("%s not found: %s", tool, keychainHint)
		}
	}
	session := testenv.Tool(t, "desktop/with-desktop-session.sh")
	memory := testenv.Memory(t)
	const token = "ghp_K3ych41nSn4psh0tT0kenF0rTh3T3st00042"
	const apiKey = "sk-ant-api03-Pq9Lm2Xv7Rt4Wz1Nb8Kc3Hd6Fg0Js5Ae-Yx4Vn2Mz7Bq1AA"
	home, hubHome := t.TempDir(), filepath.Join(t.TempDir(), "hub")
	args, _ := json.Marshal(memory[1:])
	orig := `{
  "numStartups": 4,
  "primaryApiKey": "` + apiKey + `",
  "mcpServers": {
    "memory": {
      "type": "stdio",
      "command": "` + memory[0] + `",
      "args": ` + string(args) + `,
      "env": {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "` + token + `",
        "MEMORY_FILE_PATH": "` + filepath.Join(home, "memory.jsonl") + `"
      }
    }
  }
}
`
	claude := filepath.Join(home, ".claude.json")
	if err := os.WriteFile(claude, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	journey := `set -e
capabilities hub init --import --yes
capabilities hub connect --replace --client claude-code
capabilities hub disconnect --client claude-code
capabilities hub connect --client claude-code
capabilities rollback
capabilities rollback
capabilities rollback
capabilities hub doctor || true
`
	cmd := exec.Command(session, "sh", "-c", journey)
	cmd.Env = append(os.Environ(), "TEST_HOME="+home, "CAPABILITIES_HOME="+hubHome, "NO_TRAY_HOST=1", "NO_NOTIFYD=1",
		"PATH="+filepath.Dir(memory[0])+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "NO_KEYRING=") })
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := waitBounded(cmd); err != nil {
		t.Fatalf("the journey: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "moved GITHUB_PERSONAL_ACCESS_TOKEN into the keychain") {
		t.Fatalf("import did not move the token:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(hubHome, "hub", "secrets.json")); err == nil {
		t.Fatalf("the hub used its file, not the keychain:\n%s", out.String())
	}
	snaps, _ := filepath.Glob(filepath.Join(hubHome, "hub", "snapshots", "*", "snapshot.json"))
	if len(snaps) != 3 {
		t.Errorf("%d snapshots, want 3 (connect, disconnect, connect)", len(snaps))
	}
	for _, v := range []string{token, apiKey} {
		if where := holding(t, hubHome, v); where != "" {
			t.Errorf("%s holds the credential %.8s…", where, v)
		}
	}
	if b, _ := os.ReadFile(claude); string(b) != orig {
		t.Errorf("after three rollbacks ~/.claude.json is not as it was:\n%s\n%s", b, out.String())
	}
}

// holding names the first file under dir holding v in one of the forms a
// reader decodes (as it is, base64, hex, JSON- or URL-escaped); "" for none.
func holding(t *testing.T, dir, v string) string {
	t.Helper()
	q, _ := json.Marshal(v)
	forms := []string{v, strings.Trim(string(q), `"`), url.QueryEscape(v), hex.EncodeToString([]byte(v)),
		base64.StdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v))}
	found := ""
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || found != "" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, f := range forms {
			if bytes.Contains(b, []byte(f)) {
				found = p
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
