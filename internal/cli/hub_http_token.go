package cli

import (
	"fmt"
	"github.com/spf13/cobra"
)

func newHTTPTokenCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "http-token",
		Short: "Print the bearer token agents send to `serve --http` (created if missing)",
		Long: `Print the bearer token every request to ` + "`capabilities hub serve --http`" + ` must send
(Authorization: Bearer <token>), and nothing else, on stdout: TOKEN=$(capabilities hub http-token).
It is kept in $CAPABILITIES_HOME/hub/http-token (mode 600) with the hub folder's store, in
the database with a database store (--store, CAPABILITIES_STORE), where every serve --http
over it uses the same one; made on first use. Whoever holds it can run the hub's tools:
give it only to the agents you connect.`,
		Example: `  TOKEN=$(capabilities hub http-token)
  curl -H "Authorization: Bearer $TOKEN" https://hub.example.com/mcp ...`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			// The hub must exist (hub init), whichever store keeps it.
			st, err := e.openStore(c.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			tok, created, _, where, err := hubHTTPToken(c.Context(), st)
			if err != nil {
				return err
			}
			if created {
				e.log.Info("made the HTTP bearer token", "in", where)
			}
			_, err = fmt.Fprintln(e.stdout, tok)
			return err
		},
	}
}
