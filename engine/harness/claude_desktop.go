package harness

// Claude Desktop: claude_desktop_config.json in ~/.config/Claude (Linux),
// ~/Library/Application Support/Claude (macOS), %APPDATA%\Claude (Windows).
func init() {
	register(Harness{
		Name: "claude-desktop", Title: "Claude Desktop", Connect: true,
		files: func(e Env) []File {
			return []File{{Path: e.userConfig("Claude", "claude_desktop_config.json"), Format: JSON, ServersKey: []string{"mcpServers"}, Writable: true}}
		},
	})
}
