package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/joho/godotenv"
)

// secretNeed is one credential a source needs on this machine: the
// connection it is stored under, the name it is known by everywhere (an
// environment variable's: GITHUB_PERSONAL_ACCESS_TOKEN), and where the
// upstream reads it (hub.AuthRequest's Env or Header).
type secretNeed struct {
	Namespace  string `json:"namespace"`
	Connection string `json:"connection"`
	Name       string `json:"name"`
	Env        string `json:"env,omitempty"`
	Header     string `json:"header,omitempty"`
}

func (n secretNeed) String() string {
	return fmt.Sprintf("%s (%s/%s)", n.Name, n.Namespace, n.Connection)
}

// dotEnvPath is $CAPABILITIES_HOME/.env (~/.capabilities/.env).
func dotEnvPath() (string, error) {
	home, err := store.Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".env"), nil
}

// readDotEnv reads ~/.capabilities/.env; a file that does not exist is
// empty. A malformed file is an error naming it.
func readDotEnv() (map[string]string, error) {
	p, err := dotEnvPath()
	if err != nil {
		return nil, err
	}
	vals, err := godotenv.Read(p)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s (lines of NAME=value): %w", p, err)
	}
	return vals, nil
}

// findSecret looks up the value of a need whose connection has none yet,
// in the seed's order after the keychain: the environment (the need's
// Name), ~/.capabilities/.env, then a masked prompt (not with --no-input).
// It returns "" when the need is found nowhere (or the answer was empty),
// and where the value came from. dotEnv caches the .env file's values
// between calls (nil: not read yet).
func (e *env) findSecret(n secretNeed, dotEnv *map[string]string) (value, where string, err error) {
	if v := os.Getenv(n.Name); v != "" {
		return v, "environment", nil
	}
	if *dotEnv == nil {
		vals, err := readDotEnv()
		if err != nil {
			return "", "", err
		}
		*dotEnv = vals
	}
	if v := (*dotEnv)[n.Name]; v != "" {
		return v, "~/.capabilities/.env", nil
	}
	if e.noInput {
		return "", "", nil
	}
	v, err := e.readSecret(fmt.Sprintf("%s for %s/%s (input hidden): ", n.Name, n.Namespace, n.Connection))
	if err != nil {
		return "", "", err
	}
	return v, "prompt", nil
}

// provideSecrets stores a value for each need whose connection has none
// yet, looked up in the seed's order: the environment (the need's Name),
// then the keychain (the connection is already there: nothing to do),
// then ~/.capabilities/.env, then a masked prompt. With --no-input a need
// found nowhere is not asked for: the error names every such need. It
// returns where each value came from, by need, for the caller to report
// (never the value).
func (e *env) provideSecrets(ctx context.Context, h *hub.Hub, needs []secretNeed) (map[secretNeed]string, error) {
	from := map[secretNeed]string{}
	var dotEnv map[string]string
	var missing []secretNeed
	for _, n := range needs {
		if h.ConnectionReady(ctx, n.Namespace, n.Connection) {
			from[n] = "keychain"
			continue
		}
		value, where, err := e.findSecret(n, &dotEnv)
		if err != nil {
			return from, err
		}
		if value == "" {
			missing = append(missing, n)
			continue
		}
		if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: n.Namespace, Connection: n.Connection, Value: value, Env: n.Env, Header: n.Header}); err != nil {
			return from, fmt.Errorf("storing %s: %w", n, err)
		}
		from[n] = where
	}
	if len(missing) > 0 {
		names := make([]string, len(missing))
		for i, n := range missing {
			names[i] = n.String()
		}
		return from, fmt.Errorf("missing %d secret(s): %s; set each in the environment or in ~/.capabilities/.env (NAME=value), or run without --no-input to be asked", len(missing), strings.Join(names, ", "))
	}
	return from, nil
}
