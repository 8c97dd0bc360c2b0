package harness

// Hermes: $HERMES_HOME/config.yaml (default ~/.hermes), mcp_servers.
// Connect prints the entry to add.
func init() {
	register(Harness{
		Name: "hermes", Title: "Hermes",
		files: func(e Env) []File {
			dir := e.get("HERMES_HOME")
			if dir == "" {
				dir = e.home(".hermes")
			}
			return []File{{Path: e.join(dir, "config.yaml"), Format: YAML, ServersKey: []string{"mcp_servers"}}}
		},
	})
}
