package harness

// Windsurf: ~/.codeium/windsurf/mcp_config.json, mcpServers (serverUrl for
// remote servers, disabled: true).
func init() {
	register(Harness{
		Name: "windsurf", Title: "Windsurf", Connect: true, Off: Flag{Key: "disabled", Value: true},
		vars: Vars{EnvPrefix: true, Passed: []string{"file"}}, // ${env:NAME}; ${file:path}, a file's contents
		files: func(e Env) []File {
			return []File{{Path: e.home(".codeium", "windsurf", "mcp_config.json"), Format: JSON, ServersKey: []string{"mcpServers"}, Writable: true}}
		},
	})
}
