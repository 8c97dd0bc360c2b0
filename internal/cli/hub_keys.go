package cli

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/elicit"
	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// The hub's own keys: in this machine's hub folder with the file store, in
// the database with a database store (sealed there among the hub's secrets
// when a KEK is set), so that every hub process over it signs and accepts
// the same elicitation states and serves with the same bearer token.

// keysOf returns the hub's keys when its store keeps them for every process
// (store/postgres.Store; ok false for the file store): sealed among the
// hub's secrets when those are sealed under a KEK (docs/secrets-at-rest.md),
// else in the store's own table.
func keysOf(ctx context.Context, st store.Store) (k secret.Keys, ok bool, err error) {
	plain, ok := st.(secret.PlainKeys)
	if !ok {
		return nil, false, nil
	}
	var hubID string
	if f, isHub := st.(interface{ Hub() store.Hub }); isHub {
		hubID = f.Hub().ID
	}
	k, err = secret.KeysOf(ctx, st, plain, hubID)
	return k, true, err
}

// hubSigner is the signer of elicitation states.
func hubSigner(ctx context.Context, st hubStore) (*elicit.Signer, error) {
	k, shared, err := keysOf(ctx, st)
	switch {
	case err != nil:
		return nil, err
	case shared:
		return elicit.LoadSignerFrom(ctx, k)
	}
	return elicit.LoadSigner(st.Dir())
}

// hubHTTPToken is the bearer token of serve --http, made on first use
// (created). file is where the file store keeps it, "" when the database
// does; where says it for messages.
func hubHTTPToken(ctx context.Context, st hubStore) (tok string, created bool, file, where string, err error) {
	k, shared, err := keysOf(ctx, st)
	switch {
	case err != nil:
		return "", false, "", "", err
	case shared:
		key, created, err := k.Key(ctx, postgres.KeyHTTPToken, 32)
		if err != nil {
			return "", false, "", "", fmt.Errorf("reading the HTTP token: %w", err)
		}
		return hex.EncodeToString(key), created, "", "the hub's database", nil
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
