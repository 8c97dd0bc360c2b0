package harness

// Codex CLI: $CODEX_HOME/config.toml (default ~/.codex), tables
// [mcp_servers.<name>]; a trusted project's .codex/config.toml. Skills in
// $CODEX_HOME/skills.
func init() {
	register(Harness{
		Name: "codex", Title: "Codex CLI", Connect: true, Off: Flag{Key: "enabled", Value: false},
		// Nothing written in an entry; bearer_token_env_var and
		// env_http_headers name variables (read as ${VAR} headers).
		vars: Vars{Braces: true, HeadersOnly: true},
		files: func(e Env) []File {
			return []File{
				{Path: e.join(codexHome(e), "config.toml"), Format: TOML, ServersKey: []string{"mcp_servers"}, Writable: true},
				{Path: e.project(".codex", "config.toml"), Format: TOML, ServersKey: []string{"mcp_servers"}, Project: true},
			}
		},
		skills: func(e Env) string { return e.join(codexHome(e), "skills") },
	})
}

func codexHome(e Env) string {
	if d := e.get("CODEX_HOME"); d != "" {
		return d
	}
	return e.home(".codex")
}
