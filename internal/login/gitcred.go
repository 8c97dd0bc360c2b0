package login

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/secret"
)

// HelperArgs are the arguments, after the executable, that make it a git
// credential helper (git appends get, store or erase).
const HelperArgs = "login git-credential"

// GitEnv returns environment entries that make git use `<exe> login
// git-credential` as a credential helper, for the git commands of the
// stack: GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n after the ones already in the
// environment (GIT_CONFIG_COUNT), and the new GIT_CONFIG_COUNT. Append them
// to the command's environment (later entries win).
//
// The helper is added after the person's own helpers (git asks each in
// turn until one answers); for a host with no sign-in it answers nothing,
// so theirs keep working.
func GitEnv(exe string) []string {
	n := 0
	if v, err := strconv.Atoi(os.Getenv("GIT_CONFIG_COUNT")); err == nil && v > 0 {
		n = v
	}
	return []string{
		fmt.Sprintf("GIT_CONFIG_KEY_%d=credential.helper", n),
		fmt.Sprintf("GIT_CONFIG_VALUE_%d=!%s %s", n, shellQuote(exe), HelperArgs),
		fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+1),
	}
}

// Self is the path git should run this program by, for GitEnv: the name
// it was started by (os.Args[0]) made absolute, or found on PATH when it
// has no directory, so that a program known by its name (a link, as in
// the CLI's tests) is started as itself; os.Executable when neither works.
func Self() (string, error) {
	name := os.Args[0]
	if name != "" {
		if strings.ContainsRune(name, os.PathSeparator) {
			if abs, err := filepath.Abs(name); err == nil {
				return abs, nil
			}
		} else if p, err := exec.LookPath(name); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				return abs, nil
			}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this program's path for git's credential helper: %w", err)
	}
	return exe, nil
}

// shellQuote quotes s for sh, which git runs a "!" helper with.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Credential is a credential description of git's credential-helper
// protocol: attribute=value lines up to a blank line or the end of input.
type Credential map[string]string

// ReadCredential reads a credential description. A repeated attribute
// keeps its last value (git's own rule for those that are not arrays).
func ReadCredential(r io.Reader) (Credential, error) {
	c := Credential{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			break
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, errors.New("reading git's credential request: a line is not attribute=value")
		}
		c[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading git's credential request: %w", err)
	}
	return c, nil
}

// Helper answers one request of git's credential-helper protocol:
//
//   - get: for an https URL of a host with a sign-in, the user name and a
//     valid access token (refreshed when it expired); for any other,
//     nothing, so git asks its other helpers or the person.
//   - store: nothing to do (the sign-in is already stored).
//   - erase: git says the credential was refused; the sign-in is removed
//     when the refused password is its access token.
//
// warn receives a line for the person (git shows a helper's stderr), such
// as a sign-in that expired.
func Helper(ctx context.Context, action string, in io.Reader, out io.Writer, warn io.Writer, st secret.Store, hc *http.Client) error {
	switch action {
	case "get", "store", "erase":
	default:
		// git's rule: a helper ignores an action it does not know.
		return nil
	}
	c, err := ReadCredential(in)
	if err != nil {
		return err
	}
	if action == "store" || c["protocol"] != "https" || c["host"] == "" {
		return nil
	}
	host, err := NormalizeHost(c["host"])
	if err != nil {
		return nil // not a host a sign-in could be for
	}
	s, err := Load(ctx, st, host)
	if errors.Is(err, ErrNotSignedIn) {
		return nil
	}
	if err != nil {
		return err
	}
	if action == "erase" {
		if c["password"] != "" && c["password"] == s.Token.AccessToken {
			if err := Delete(ctx, st, host); err != nil && !errors.Is(err, ErrNotSignedIn) {
				return err
			}
			fmt.Fprintf(warn, "capabilities: %s refused the sign-in's token; it is removed: sign in again with capabilities login --host %s\n", host, host)
		}
		return nil
	}
	tok, err := s.AccessToken(ctx, st, hc)
	if err != nil {
		fmt.Fprintf(warn, "capabilities: %v\n", err)
		return nil
	}
	user := s.Username
	if user == "" {
		user = DefaultUsername(s.Issuer)
	}
	_, err = fmt.Fprintf(out, "protocol=https\nhost=%s\nusername=%s\npassword=%s\n", c["host"], user, tok)
	return err
}
