package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

func newCallCmd(e *env) *cobra.Command {
	var (
		asJSON bool
		conn   string
	)
	c := &cobra.Command{
		Use:   "call <address> ['<json arguments>' | -] [--connection NAME]",
		Short: "Call one tool and print its result",
		Long:  "Call a tool by its address (namespace.tool) with a JSON object of arguments (- reads them from standard input), validated against the tool's input schema first. Prints the tool's text content; --json prints the whole MCP result. A deny rule holds for this call too; nothing else asks: you are the person.",
		Example: `  capabilities hub call everything.echo '{"message":"hi"}'
  capabilities hub call memory.readGraph
  capabilities hub call filesystem.write_file - < args.json`,
		ValidArgsFunction: complete(byPosition(addresses)),
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("call expects an address and optionally a JSON object of arguments (got %d arguments)", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			raw := json.RawMessage(`{}`)
			if len(args) == 2 {
				raw = json.RawMessage(args[1])
				if args[1] == "-" {
					b, err := io.ReadAll(e.stdin)
					if err != nil {
						return fmt.Errorf("reading the arguments from standard input: %w", err)
					}
					raw = b
				}
				var v any
				if err := json.Unmarshal(raw, &v); err != nil {
					return usagef("the arguments are not valid JSON (%v); write a JSON object, e.g. '{\"message\":\"hi\"}'", err)
				}
				if _, ok := v.(map[string]any); !ok {
					return usagef("tool arguments must be a JSON object; got %s (write e.g. '{\"message\":\"hi\"}')", model.JSONKind(v))
				}
			}
			h, _, err := e.openHub()
			if err != nil {
				return err
			}
			defer h.Close()
			// Arguments that do not fit the tool's schema are a usage
			// mistake; an unknown address is reported by Call.
			if _, t, _, err := h.Tool(c.Context(), args[0]); err == nil {
				if err := hub.ValidateArgs(t, raw); err != nil {
					return usageError{fmt.Errorf("calling %s: %w", args[0], err)}
				}
			}
			res, err := h.Call(c.Context(), args[0], raw, conn)
			if err != nil {
				return err
			}
			err = e.scrubbedOut(h.Scrubber(), asJSON, func() error {
				if asJSON {
					return e.printJSON(res)
				}
				_, err := fmt.Fprintln(e.stdout, resultText(res))
				return err
			})
			if err != nil {
				return err
			}
			if res.IsError {
				return fmt.Errorf("calling %s: the tool reported an error", args[0])
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the whole MCP result as JSON")
	c.Flags().StringVar(&conn, "connection", "", "the connection `NAME` (credential) to call through; default: the source's default")
	_ = c.RegisterFlagCompletionFunc("connection", complete(connectionsOf))
	return c
}

// resultText renders a tool result's content for a terminal.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s]", c.URI))
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", c.Resource.URI))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n")
}
