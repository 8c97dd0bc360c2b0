package login

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/oauth2"
)

func TestRef(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want, err string }{
		{in: "github.com", want: "login/github.com"},
		{in: "GitHub.COM.", want: "login/github.com"},
		{in: "git.example.com:8443", want: "login/git.example.com_8443"},
		{in: "127.0.0.1:3000", want: "login/127.0.0.1_3000"},
		{in: "", err: "empty"},
		{in: "git.example.com:", err: "is not a number"},
		{in: "git.example.com:80a", err: "is not a number"},
		{in: "bad_host!.com", err: "is not a host name"},
		{in: "-x.com", err: "is not a host name"},
		{in: "a/b", err: "is not a host name"},
	} {
		got, err := Ref(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Ref(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Ref(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			continue
		}
		if err := secret.ValidateRef(got); err != nil {
			t.Errorf("Ref(%q) = %q: %v", tc.in, got, err)
		}
	}
}

func TestSaveLoadDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := secret.NewMemory(nil)
	if _, err := Load(ctx, st, "github.com"); !errors.Is(err, ErrNotSignedIn) {
		t.Fatalf("Load before sign-in = %v, want ErrNotSignedIn", err)
	}
	s := &Session{Host: "github.com", Issuer: GitHubIssuer, ClientID: "cid", TokenURL: GitHub.TokenURL, Scopes: []string{"repo"}, Username: "x-access-token", Token: &oauth2.Token{AccessToken: "gho_saved", TokenType: "bearer"}}
	if err := Save(ctx, st, s); err != nil {
		t.Fatal(err)
	}
	got, err := Load(ctx, st, "GITHUB.com")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, got, cmpopts.IgnoreUnexported(oauth2.Token{})); diff != "" {
		t.Errorf("Load (-saved +loaded):\n%s", diff)
	}
	// A value that is not a sign-in is refused without quoting it.
	if err := st.Set(ctx, "login/bad.example", "not-json-secretvalue"); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, st, "bad.example"); err == nil || strings.Contains(err.Error(), "secretvalue") || !strings.Contains(err.Error(), "sign in again") {
		t.Errorf("Load of a bad value = %v", err)
	}
	if err := Delete(ctx, st, "github.com"); err != nil {
		t.Fatal(err)
	}
	if err := Delete(ctx, st, "github.com"); !errors.Is(err, ErrNotSignedIn) {
		t.Errorf("second Delete = %v, want ErrNotSignedIn", err)
	}
	if err := Save(ctx, st, &Session{Host: "github.com", Token: &oauth2.Token{}}); err == nil {
		t.Error("Save of an empty token succeeded")
	}
}

// TestRefresh: an expired access token is renewed with the refresh token
// (the refresh_token grant, client ID in the body) and the new token set
// is stored; without a refresh token, or when the server refuses it, the
// error says to sign in again.
func TestRefresh(t *testing.T) {
	t.Parallel()
	ctx := waitCtx(t)
	s := newDeviceServer(t)
	s.refresh = []answer{{token: "tok-renewed", refresh: "ref-2", expires: 3600}, {err: "invalid_grant"}}
	st := secret.NewMemory(nil)
	host := "127.0.0.1"
	sess := &Session{Host: host, Issuer: s.URL, ClientID: "cid", TokenURL: s.URL + "/token", Token: &oauth2.Token{AccessToken: "tok-old", RefreshToken: "ref-1", Expiry: time.Now().Add(-time.Minute)}}
	if err := Save(ctx, st, sess); err != nil {
		t.Fatal(err)
	}
	loaded, _ := Load(ctx, st, host)
	got, err := loaded.AccessToken(ctx, st, s.Client())
	if err != nil || got != "tok-renewed" {
		t.Fatalf("AccessToken = %q, %v; want the renewed token", got, err)
	}
	s.mu.Lock()
	refreshes := s.refreshes
	s.mu.Unlock()
	if len(refreshes) != 1 || refreshes[0].Get("refresh_token") != "ref-1" || refreshes[0].Get("client_id") != "cid" {
		t.Fatalf("refresh requests = %v", refreshes)
	}
	stored, _ := Load(ctx, st, host)
	if stored.Token.AccessToken != "tok-renewed" || stored.Token.RefreshToken != "ref-2" || !stored.Token.Valid() {
		t.Errorf("stored after refresh = %+v", stored.Token)
	}
	// A valid token is returned without asking the server.
	if got, err := stored.AccessToken(ctx, st, s.Client()); err != nil || got != "tok-renewed" {
		t.Errorf("AccessToken of a valid token = %q, %v", got, err)
	}
	// Refused refresh.
	stored.Token.Expiry = time.Now().Add(-time.Minute)
	if _, err := stored.AccessToken(ctx, st, s.Client()); !errors.Is(err, ErrSignInAgain) || !strings.Contains(err.Error(), "invalid_grant") || !strings.Contains(err.Error(), "capabilities login --host 127.0.0.1") {
		t.Errorf("AccessToken with a refused refresh = %v", err)
	}
	// No refresh token.
	stored.Token.RefreshToken = ""
	if _, err := stored.AccessToken(ctx, st, s.Client()); !errors.Is(err, ErrSignInAgain) {
		t.Errorf("AccessToken without a refresh token = %v", err)
	}
}

// TestHelper: get answers for an https URL of the signed-in host only;
// store does nothing; erase removes the sign-in only when git says its
// own token was refused.
func TestHelper(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := secret.NewMemory(nil)
	if err := Save(ctx, st, &Session{Host: "github.com", Issuer: GitHubIssuer, Username: "x-access-token", Token: &oauth2.Token{AccessToken: "gho_helper"}}); err != nil {
		t.Fatal(err)
	}
	run := func(action, in string) string {
		t.Helper()
		var out, warn bytes.Buffer
		if err := Helper(ctx, action, strings.NewReader(in), &out, &warn, st, nil); err != nil {
			t.Fatalf("Helper %s: %v", action, err)
		}
		return out.String()
	}
	for _, tc := range []struct{ name, action, in, want string }{
		{"get", "get", "protocol=https\nhost=github.com\npath=me/stack.git\n\n", "protocol=https\nhost=github.com\nusername=x-access-token\npassword=gho_helper\n"},
		{"get upper case host", "get", "protocol=https\nhost=GitHub.com\n", "protocol=https\nhost=GitHub.com\nusername=x-access-token\npassword=gho_helper\n"},
		{"another host", "get", "protocol=https\nhost=gitlab.com\n\n", ""},
		{"plain http", "get", "protocol=http\nhost=github.com\n\n", ""},
		{"ssh", "get", "protocol=ssh\nhost=github.com\n\n", ""},
		{"store", "store", "protocol=https\nhost=github.com\nusername=x\npassword=y\n\n", ""},
		{"unknown action", "frobnicate", "protocol=https\nhost=github.com\n\n", ""},
		{"erase another password", "erase", "protocol=https\nhost=github.com\nusername=x\npassword=other\n\n", ""},
	} {
		if got := run(tc.action, tc.in); got != tc.want {
			t.Errorf("%s: Helper answered %q, want %q", tc.name, got, tc.want)
		}
	}
	if _, err := Load(ctx, st, "github.com"); err != nil {
		t.Fatalf("the sign-in is gone after store or erase of another password: %v", err)
	}
	run("erase", "protocol=https\nhost=github.com\nusername=x-access-token\npassword=gho_helper\n\n")
	if _, err := Load(ctx, st, "github.com"); !errors.Is(err, ErrNotSignedIn) {
		t.Errorf("after erase of its token, Load = %v", err)
	}
	if got := run("get", "protocol=https\nhost=github.com\n\n"); got != "" {
		t.Errorf("get after erase = %q", got)
	}
	if _, err := ReadCredential(strings.NewReader("protocol=https\nno equals sign here\n")); err == nil || strings.Contains(err.Error(), "equals") {
		t.Errorf("ReadCredential of a bad line = %v (it must not quote the line)", err)
	}
}

func TestGitEnv(t *testing.T) {
	t.Setenv("GIT_CONFIG_COUNT", "")
	want := []string{"GIT_CONFIG_KEY_0=credential.helper", `GIT_CONFIG_VALUE_0=!'/opt/it'\''s here/capabilities' login git-credential`, "GIT_CONFIG_COUNT=1"}
	if diff := cmp.Diff(want, GitEnv("/opt/it's here/capabilities")); diff != "" {
		t.Errorf("GitEnv (-want +got):\n%s", diff)
	}
	t.Setenv("GIT_CONFIG_COUNT", "2")
	want = []string{"GIT_CONFIG_KEY_2=credential.helper", "GIT_CONFIG_VALUE_2=!'/bin/c' login git-credential", "GIT_CONFIG_COUNT=3"}
	if diff := cmp.Diff(want, GitEnv("/bin/c")); diff != "" {
		t.Errorf("GitEnv after two entries (-want +got):\n%s", diff)
	}
}

// helperFileEnv, set, makes this test binary the helper: `<test binary>
// login git-credential <action>` answers from the secret file it names.
const helperFileEnv = "CAPABILITIES_LOGIN_TEST_SECRETS"

// helperKeychainEnv, set, makes that helper use the OS keychain (the file
// only as its fallback).
const helperKeychainEnv = "CAPABILITIES_LOGIN_TEST_KEYCHAIN"

func TestMain(m *testing.M) {
	if file := os.Getenv(helperFileEnv); file != "" && len(os.Args) == 4 && os.Args[1] == "login" && os.Args[2] == "git-credential" {
		opts := secret.Options{File: file, Keychain: noKeychain{}, Logger: slog.New(slog.DiscardHandler)}
		if os.Getenv(helperKeychainEnv) != "" {
			opts.Keychain = nil
		}
		st := secret.Open(opts)
		if err := Helper(context.Background(), os.Args[3], os.Stdin, os.Stdout, os.Stderr, st, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type noKeychain struct{}

var errNoKeychain = errors.New("no keychain in this test")

func (noKeychain) Get(string, string) (string, error) { return "", errNoKeychain }
func (noKeychain) Set(string, string, string) error   { return errNoKeychain }
func (noKeychain) Delete(string, string) error        { return errNoKeychain }

// TestGitCredentialFill: the real git, given GitEnv's environment, asks
// the helper, and gets the sign-in's token for that host and nothing for
// another (for which git then fails, as it may not prompt).
func TestGitCredentialFill(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed: install git (apt-get install git)")
		}
		t.Skip("git is not installed: install git (apt-get install git)")
	}
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "secrets.json")
	st := secret.Open(secret.Options{File: file, Keychain: noKeychain{}, Logger: slog.New(slog.DiscardHandler)})
	const token = "gho_GitFillToken0123456789"
	if err := Save(ctx, st, &Session{Host: "git.example.com:8443", Issuer: "https://git.example.com:8443", Username: "oauth2", Token: &oauth2.Token{AccessToken: token}}); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fill := func(url string) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, testenv.Timeout(30*time.Second))
		defer cancel()
		cmd := exec.CommandContext(cctx, "git", "credential", "fill")
		cmd.Stdin = strings.NewReader("url=" + url + "\n\n")
		home := t.TempDir()
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=", helperFileEnv+"="+file, "GIT_CONFIG_COUNT=")
		cmd.Env = append(cmd.Env, GitEnv(exe)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return string(out), fmt.Errorf("%w: %s", err, stderr.String())
		}
		return string(out), nil
	}
	out, err := fill("https://git.example.com:8443/me/stack.git")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "username=oauth2\n") || !strings.Contains(out, "password="+token+"\n") {
		t.Errorf("git credential fill answered:\n%s\nwant the sign-in's user name and token", out)
	}
	if out, err := fill("https://other.example.com/me/stack.git"); err == nil || strings.Contains(out, token) {
		t.Errorf("git credential fill for another host = %q, %v; want no credential", out, err)
	}
}

// TestSelf: the program's path for git, from the name it was started by.
func TestSelf(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "capabilities-self")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	old := os.Args[0]
	t.Cleanup(func() { os.Args[0] = old })
	exe, _ := os.Executable()
	wd, _ := os.Getwd()
	for _, tc := range []struct{ arg0, want string }{
		{"capabilities-self", prog},
		{"./relative/capabilities", filepath.Join(wd, "relative", "capabilities")},
		{prog, prog},
		{"not-on-path", exe},
		{"", exe},
	} {
		os.Args[0] = tc.arg0
		if got, err := Self(); err != nil || got != tc.want {
			t.Errorf("Self() with os.Args[0] = %q: %q, %v; want %q", tc.arg0, got, err, tc.want)
		}
	}
}
