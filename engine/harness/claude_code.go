package harness

// Claude Code: ~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json): top-level
// mcpServers (user scope) and projects[<abs path>].mcpServers (local
// scope); <repo>/.mcp.json (project scope). Skills in ~/.claude/skills.
func init() {
	register(Harness{
		Name: "claude-code", Title: "Claude Code", Connect: true,
		files: func(e Env) []File {
			user := e.home(".claude.json")
			if d := e.get("CLAUDE_CONFIG_DIR"); d != "" {
				user = e.join(d, ".claude.json")
			}
			fs := []File{{Path: user, Format: JSON, ServersKey: []string{"mcpServers"}, Writable: true}}
			if e.Cwd != "" {
				fs = append(fs, File{Path: user, Format: JSON, ServersKey: []string{"projects", e.Cwd, "mcpServers"},
					DisabledKey: []string{"projects", e.Cwd, "disabledMcpServers"}, Project: true, InUserFile: true})
			}
			return append(fs, File{Path: e.project(".mcp.json"), Format: JSON, ServersKey: []string{"mcpServers"}, Project: true})
		},
		skills: func(e Env) string {
			if d := e.get("CLAUDE_CONFIG_DIR"); d != "" {
				return e.join(d, "skills")
			}
			return e.home(".claude", "skills")
		},
	})
}
