package harness

// VS Code: mcp.json in the user profile (~/.config/Code/User, ~/Library/
// Application Support/Code/User, %APPDATA%\Code\User) and .vscode/mcp.json;
// servers under "servers", prompted values under "inputs" (${input:…}).
func init() {
	register(Harness{
		Name: "vscode", Title: "VS Code", Connect: true,
		// ${env:NAME} and the predefined variables (${workspaceFolder}…);
		// ${input:id} is asked for when the server starts: left as written.
		vars: Vars{EnvPrefix: true, Editor: true, Passed: []string{"input", "config", "command"}},
		files: func(e Env) []File {
			return []File{
				{Path: e.userConfig("Code", "User", "mcp.json"), Format: JSONC, ServersKey: []string{"servers"}, Writable: true},
				{Path: e.project(".vscode", "mcp.json"), Format: JSONC, ServersKey: []string{"servers"}, Project: true},
			}
		},
	})
}
