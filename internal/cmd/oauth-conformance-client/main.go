// Command oauth-conformance-client is the MCP client the conformance suite's
// auth scenarios (@modelcontextprotocol/conformance client --suite auth)
// drive: given a server URL, it connects through the hub's own code — the
// streamable-HTTP session of engine/source with an OAuth credential of
// engine/oauth, exactly what a signed-in source uses — lists the tools and
// calls test-tool. Its one difference from `capabilities hub auth`: the
// authorization page is "opened" by an HTTP client that follows the
// authorization server's redirect to the hub's loopback listener (the
// suite's server approves at once), and a refused token signs in again
// (oauth.Interactive) instead of waiting for a person.
//
// The suite sets MCP_CONFORMANCE_SCENARIO and, for pre-registration,
// MCP_CONFORMANCE_CONTEXT ({"client_id", "client_secret"}). The tests build
// it (engine/oauth's TestConformanceAuthSuite); it is not shipped.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/oauth"
	"github.com/capabilities-sh/capabilities/engine/source"
)

// cimdURL is the client ID metadata document URL the suite's basic-cimd
// scenario expects a client to present.
const cimdURL = "https://conformance-test.local/client-metadata.json"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: oauth-conformance-client <server-url>")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := run(ctx, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, serverURL string) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var cc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &cc); err != nil {
			return fmt.Errorf("reading MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	st := &oauth.MemoryStore{} // the tokens of this one run
	ts := oauth.NewSource(nil, st, oauth.SourceOptions{})
	opts := oauth.Options{
		ServerURL:         serverURL,
		ClientID:          cc.ClientID,
		ClientSecret:      cc.ClientSecret,
		ClientMetadataURL: cimdURL,
		Open:              follow(ctx),
		Logger:            log,
	}
	cred := &source.Credential{Connection: "default", OAuth: ts, Challenge: oauth.Interactive(ts, opts)}
	src := model.Source{Namespace: "conformance", Kind: model.KindHTTP, URL: serverURL}
	s, err := source.ConnectWith(ctx, src, cred, source.Options{Logger: log, ConnectTimeout: 30 * time.Second})
	if err != nil {
		return err
	}
	defer s.Close()
	m, err := s.ListTools(ctx)
	if err != nil {
		return fmt.Errorf("listing tools: %w", err)
	}
	log.Info("listed tools", "n", len(m.Tools))
	if _, err := s.CallTool(ctx, "test-tool", json.RawMessage(`{}`)); err != nil {
		return fmt.Errorf("calling test-tool: %w", err)
	}
	return nil
}

// follow opens the authorization URL with an HTTP client that follows the
// redirects, the last of which reaches the sign-in's loopback listener.
func follow(ctx context.Context) func(string) error {
	return func(u string) error {
		go func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				fmt.Fprintln(os.Stderr, "following the authorization URL:", err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
		return nil
	}
}
