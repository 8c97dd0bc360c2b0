package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hostedlogin"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/browser"
)

// relist is how often the app reads the list of hosted hubs signed in to
// again (a `hub login` or `hub logout` while it runs).
var relist = 30 * time.Second

// startHosted follows the inbox of every hosted hub signed in to with
// `capabilities hub login <url>` (hostedlogin's list in the hub's folder),
// and of those signed in to later, until ctx ends.
func (a *App) startHosted(ctx context.Context, open func(string) error) {
	if open == nil {
		open = browser.Open
	}
	a.remote = newRemotes(open)
	a.remote.done = ctx.Done()
	a.remote.secrets = loginSecrets(a.dir, a.log)
	a.listHosted(ctx)
}

// loginSecrets is where `capabilities hub login` keeps the tokens: the OS
// keychain, with the mode-600 file fallback in the hub's folder (as the
// CLI opens it, whatever keeps the hub's own secrets).
func loginSecrets(dir string, log *slog.Logger) secret.Store {
	opts := secret.Options{File: filepath.Join(dir, "secrets.json"), Logger: log}
	if os.Getenv("NO_KEYRING") != "" {
		opts.Keychain = noKeychain{}
	}
	return secret.Open(opts)
}

// noKeychain is a keychain that is never there (NO_KEYRING=1).
type noKeychain struct{}

var errNoKeychain = errors.New("the keychain is turned off (NO_KEYRING=1)")

func (noKeychain) Get(string, string) (string, error) { return "", errNoKeychain }
func (noKeychain) Set(string, string, string) error   { return errNoKeychain }
func (noKeychain) Delete(string, string) error        { return errNoKeychain }

// listHosted follows the hosted hubs of hostedlogin's list, read again
// every relist, until ctx ends.
func (a *App) listHosted(ctx context.Context) {
	go func() {
		t := time.NewTicker(relist)
		defer t.Stop()
		warned := false
		for {
			list, err := hostedlogin.List(a.dir)
			if err != nil && !warned {
				warned = true
				a.say(fmt.Sprintf("not following hosted hubs: %v", err))
			}
			if err == nil {
				warned = false
				var urls []string
				for _, l := range list {
					urls = append(urls, l.URL)
					a.follow(ctx, l.URL, a.loginClient(l.URL))
				}
				for _, u := range a.followed() {
					if !slices.Contains(urls, u) {
						a.log.Info("signed out of a hosted hub: not following it", "hub", u)
						a.unfollow(u)
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// loginClient reaches base with its sign-in, read again each time (a new
// `hub login` replaces the tokens).
func (a *App) loginClient(base string) hostedClient {
	return func(ctx context.Context) (*http.Client, error) {
		secrets := a.remote.secrets
		if secrets == nil {
			secrets = a.hub.Secrets()
		}
		l, err := hostedlogin.Load(ctx, secrets, a.dir, base)
		if errors.Is(err, hostedlogin.ErrNotLoggedIn) {
			return nil, fmt.Errorf("%w: %w", errSignedOut, err)
		}
		if err != nil {
			return nil, err
		}
		return l.Client(ctx), nil
	}
}
