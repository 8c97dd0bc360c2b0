package harness

// Zed: settings.json in ~/.config/zed (Linux and macOS, $XDG_CONFIG_HOME
// first) or %APPDATA%\Zed (Windows), and .zed/settings.json;
// context_servers (enabled: false turns one off).
func init() {
	register(Harness{
		Name: "zed", Title: "Zed", Connect: true, Off: Flag{Key: "enabled", Value: false},
		files: func(e Env) []File {
			user := e.join(e.xdgConfig(), "zed", "settings.json")
			if e.goos() == "windows" {
				user = e.join(e.appData(), "Zed", "settings.json")
			}
			return []File{
				{Path: user, Format: JSONC, ServersKey: []string{"context_servers"}, Writable: true},
				{Path: e.project(".zed", "settings.json"), Format: JSONC, ServersKey: []string{"context_servers"}, Project: true},
			}
		},
	})
}
