package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/elicit"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/store"
)

// The hub's own keys: in this machine's hub folder with the file store, in
// the database with a database store, so that every hub process over it
// signs and accepts the same elicitation states and serves with the same
// bearer token.

// sharedKeys is a store that keeps the hub's keys for every process
// (store/postgres.Store).
type sharedKeys interface {
	elicit.Keys
	HTTPToken(ctx context.Context) (tok string, created bool, err error)
}

// hubSigner is the signer of elicitation states.
func hubSigner(ctx context.Context, st hubStore) (*elicit.Signer, error) {
	if k, ok := st.(sharedKeys); ok {
		return elicit.LoadSignerFrom(ctx, k)
	}
	return elicit.LoadSigner(st.Dir())
}

// hubHTTPToken is the bearer token of serve --http, made on first use
// (created). file is where the file store keeps it, "" when the database
// does; where says it for messages.
func hubHTTPToken(ctx context.Context, st hubStore) (tok string, created bool, file, where string, err error) {
	if k, ok := st.(sharedKeys); ok {
		tok, created, err = k.HTTPToken(ctx)
		return tok, created, "", "the hub's database", err
	}
	file = filepath.Join(st.Dir(), mcpserver.TokenFile)
	tok, created, err = mcpserver.HTTPToken(st.Dir())
	return tok, created, file, file, err
}

// serveHTTPToken is hubHTTPToken for serve --http. With a database store,
// the token is also written to this machine's hub folder (mode 600, as the
// file store keeps it), where the serve --stdio of an agent on this
// machine reads it to relay its session to this hub (mcpserver.FindHub).
func serveHTTPToken(ctx context.Context, st hubStore) (tok string, created bool, file, where string, err error) {
	tok, created, file, where, err = hubHTTPToken(ctx, st)
	if err != nil || file != "" {
		return tok, created, file, where, err
	}
	local := filepath.Join(st.Dir(), mcpserver.TokenFile)
	if b, rerr := os.ReadFile(local); rerr == nil && strings.TrimSpace(string(b)) == tok {
		return tok, created, file, where, nil
	}
	if err := store.WriteFileAtomic(local, []byte(tok+"\n")); err != nil {
		return "", false, "", "", fmt.Errorf("writing the HTTP token for this machine's agents: %w", err)
	}
	return tok, created, file, where, nil
}
