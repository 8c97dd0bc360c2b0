package harness

// pi (with pi-mcp-adapter): ~/.pi/agent/mcp.json, the shared
// ~/.config/mcp/mcp.json and .pi/mcp.json, mcpServers. Connect prints the
// entry to add.
func init() {
	register(Harness{
		Name: "pi", Title: "pi", Off: Flag{Key: "disabled", Value: true},
		files: func(e Env) []File {
			return []File{
				{Path: e.home(".pi", "agent", "mcp.json"), Format: JSON, ServersKey: []string{"mcpServers"}},
				{Path: e.join(e.xdgConfig(), "mcp", "mcp.json"), Format: JSON, ServersKey: []string{"mcpServers"}},
				{Path: e.project(".pi", "mcp.json"), Format: JSON, ServersKey: []string{"mcpServers"}, Project: true},
			}
		},
	})
}
