package harness

// Gemini CLI: ~/.gemini/settings.json and .gemini/settings.json, mcpServers
// (httpUrl for streamable HTTP, url for SSE).
func init() {
	register(Harness{
		Name: "gemini", Title: "Gemini CLI", Connect: true,
		files: func(e Env) []File {
			return []File{
				{Path: e.home(".gemini", "settings.json"), Format: JSONC, ServersKey: []string{"mcpServers"}, Writable: true},
				{Path: e.project(".gemini", "settings.json"), Format: JSONC, ServersKey: []string{"mcpServers"}, Project: true},
			}
		},
	})
}
