package harness

// Antigravity: ~/.gemini/antigravity/mcp_config.json, mcpServers (serverUrl
// for remote servers). Connect prints the entry to add.
func init() {
	register(Harness{
		Name: "antigravity", Title: "Antigravity",
		files: func(e Env) []File {
			return []File{{Path: e.home(".gemini", "antigravity", "mcp_config.json"), Format: JSON, ServersKey: []string{"mcpServers"}}}
		},
	})
}
