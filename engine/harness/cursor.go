package harness

// Cursor: ~/.cursor/mcp.json and <repo>/.cursor/mcp.json, mcpServers.
func init() {
	register(Harness{
		Name: "cursor", Title: "Cursor", Connect: true,
		// ${env:NAME}, ${userHome}, ${workspaceFolder},
		// ${workspaceFolderBasename}, ${pathSeparator} and ${/}.
		vars: Vars{EnvPrefix: true, Editor: true},
		files: func(e Env) []File {
			return []File{
				{Path: e.home(".cursor", "mcp.json"), Format: JSON, ServersKey: []string{"mcpServers"}, Writable: true},
				{Path: e.project(".cursor", "mcp.json"), Format: JSON, ServersKey: []string{"mcpServers"}, Project: true},
			}
		},
	})
}
