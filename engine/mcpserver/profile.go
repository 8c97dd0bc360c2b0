package mcpserver

import (
	"context"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inProfile serves a code-mode tool through the server's profile: the hub
// narrows search, describe and a run's namespaces to the profile's view
// (hub.WithProfile), read afresh after the profile changes.
func (s *Server) inProfile(h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return h(hub.WithProfile(ctx, s.name), req)
	}
}

// profileInstructions says, for a narrowed profile, what it shows; the
// default profile's instructions are the fixed text alone.
func profileInstructions(p *hub.Profile) string {
	if p == nil || p.All() && p.AllSkills() {
		return ""
	}
	var parts []string
	if len(p.Namespaces) > 0 {
		parts = append(parts, "namespaces "+strings.Join(p.Namespaces, ", "))
	}
	if len(p.Tools) > 0 {
		parts = append(parts, "tools "+strings.Join(p.Tools, ", "))
	}
	if len(p.Skills) > 0 {
		parts = append(parts, "skills "+strings.Join(p.Skills, ", "))
	}
	return " This is profile " + p.Name + ": it shows " + strings.Join(parts, "; ") + "."
}
