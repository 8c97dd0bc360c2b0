package cli

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/index"
	"github.com/spf13/cobra"
)

func newSearchCmd(e *env) *cobra.Command {
	var (
		ns     string
		limit  int
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "search [--namespace NS] [--limit N] <query>",
		Short: "Find tools by intent, as the model does",
		Long:  "Search the hub's tools by what they do. Prints one-line TypeScript signatures, best match first, grouped by namespace; [asks] marks a tool whose calls need a person's approval. With --namespace and no query, lists that namespace.",
		Example: `  capabilities hub search "open a ticket"
  capabilities hub search --namespace memory ''
  capabilities hub search --json --limit 3 "read a file"`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("search expects one query; quote it (got %d arguments)", len(args))
			}
			if len(args) == 0 && ns == "" {
				return usagef("search expects a query, or --namespace to list a namespace")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if limit < 1 || limit > index.MaxLimit {
				return usagef("limit %d is out of range: pass 1 to %d (default %d)", limit, index.MaxLimit, index.DefaultLimit)
			}
			q := hub.SearchQuery{Namespace: ns, Limit: limit}
			if len(args) == 1 {
				q.Text = args[0]
			}
			if n := utf8.RuneCountInString(q.Text); n > index.MaxQueryLen {
				return usagef("query is %d characters long; the limit is %d: shorten it to the words that say what the tool does", n, index.MaxQueryLen)
			}
			if strings.TrimSpace(q.Text) == "" && ns == "" {
				return usagef("query is empty: say what the tool should do (1 to %d characters), or pass --namespace to list one", index.MaxQueryLen)
			}
			h, _, err := e.openHub()
			if err != nil {
				return err
			}
			defer h.Close()
			res, err := h.Search(c.Context(), q)
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(res)
			}
			fmt.Fprint(e.stdout, res.Text())
			return nil
		},
	}
	c.Flags().StringVar(&ns, "namespace", "", "search only this `NAMESPACE`")
	_ = c.RegisterFlagCompletionFunc("namespace", complete(namespaces))
	c.Flags().IntVar(&limit, "limit", 8, "the most results, `N` from 1 to 25")
	c.Flags().BoolVar(&asJSON, "json", false, `print {"results":[…],"more":N,"hidden":N}`)
	return c
}
