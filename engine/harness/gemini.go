package harness

// Gemini CLI: ~/.gemini/settings.json and .gemini/settings.json, mcpServers
// (httpUrl for streamable HTTP, url for SSE); mcp.excluded turns servers
// off, and mcp.allowed, when there, turns off every server it does not list.
func init() {
	register(Harness{
		Name: "gemini", Title: "Gemini CLI", Connect: true,
		// $VAR, ${VAR} and ${VAR:-default} in every string of its settings.
		vars: Vars{Braces: true, Default: true, Bare: true},
		files: func(e Env) []File {
			return []File{
				{Path: e.home(".gemini", "settings.json"), Format: JSONC, ServersKey: []string{"mcpServers"}, DisabledKey: geminiExcluded, AllowedKey: geminiAllowed, Writable: true},
				{Path: e.project(".gemini", "settings.json"), Format: JSONC, ServersKey: []string{"mcpServers"}, DisabledKey: geminiExcluded, AllowedKey: geminiAllowed, Project: true},
			}
		},
	})
}

var (
	geminiExcluded = []string{"mcp", "excluded"}
	geminiAllowed  = []string{"mcp", "allowed"}
)
