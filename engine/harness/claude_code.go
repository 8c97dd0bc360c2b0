package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
)

// Claude Code: ~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json): top-level
// mcpServers (user scope) and projects[<project>].mcpServers (local scope,
// the project being the root of the git repository the current directory
// is in, else the directory); <dir>/.mcp.json (project scope) of the
// current directory and of each directory above it. Skills in
// ~/.claude/skills.
func init() {
	register(Harness{
		Name: "claude-code", Title: "Claude Code", Connect: true,
		// ${VAR} and ${VAR:-default} in command, args, env, url and
		// headers, in every scope's entries.
		vars: Vars{Braces: true, Default: true},
		files: func(e Env) []File {
			user := e.home(".claude.json")
			if d := e.get("CLAUDE_CONFIG_DIR"); d != "" {
				user = e.join(d, ".claude.json")
			}
			fs := []File{{Path: user, Format: JSON, ServersKey: []string{"mcpServers"}, Writable: true}}
			if e.Cwd != "" {
				p := claudeProject(e)
				fs = append(fs, File{Path: user, Format: JSON, ServersKey: []string{"projects", p, "mcpServers"},
					DisabledKey: []string{"projects", p, "disabledMcpServers"}, Project: true, InUserFile: true})
			}
			fs = append(fs, File{Path: e.project(".mcp.json"), Format: JSON, ServersKey: []string{"mcpServers"}, Project: true})
			for _, d := range parents(e) {
				if p := filepath.Join(d, ".mcp.json"); exists(p) {
					fs = append(fs, File{Path: p, Format: JSON, ServersKey: []string{"mcpServers"}, Project: true})
				}
			}
			return fs
		},
		offElsewhere: claudeDisabled,
		skills: func(e Env) string {
			if d := e.get("CLAUDE_CONFIG_DIR"); d != "" {
				return e.join(d, "skills")
			}
			return e.home(".claude", "skills")
		},
	})
}

// claudeDisabled lists where ~/.claude.json turns the server name off:
// the disabledMcpServers of each project (what /mcp's "disable" writes:
// Claude Code does not start the server in that project, whatever scope
// its entry is in), and a top-level disabledMcpServers. Projects in the
// order of their paths.
func claudeDisabled(doc map[string]any, name string) []string {
	lists := func(v any) bool {
		l, _ := v.([]any)
		for _, n := range l {
			if n == name {
				return true
			}
		}
		return false
	}
	var out []string
	if lists(doc["disabledMcpServers"]) {
		out = append(out, "the top-level disabledMcpServers lists it: take it out of that list")
	}
	projects, _ := doc["projects"].(map[string]any)
	paths := make([]string, 0, len(projects))
	for p := range projects {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if pr, ok := projects[p].(map[string]any); ok && lists(pr["disabledMcpServers"]) {
			out = append(out, fmt.Sprintf("in the project %s (projects[%q].disabledMcpServers lists it): take it out of that list, or turn it on with /mcp in Claude Code there", p, p))
		}
	}
	return out
}

// parents lists the directories above the current one, nearest first
// (none when the Env is another system's: its paths are not on this disk).
func parents(e Env) []string {
	if e.goos() != runtime.GOOS || !filepath.IsAbs(e.Cwd) {
		return nil
	}
	var out []string
	for d := filepath.Clean(e.Cwd); filepath.Dir(d) != d; {
		d = filepath.Dir(d)
		out = append(out, d)
	}
	return out
}

// claudeProject is what Claude Code keys the current project by in
// ~/.claude.json: the root of the git repository the current directory is
// in (a .git directory, or a worktree's .git file), else the directory;
// by its real path (a folder reached through a symlink is keyed by where
// it is).
func claudeProject(e Env) string {
	if e.goos() != runtime.GOOS || !filepath.IsAbs(e.Cwd) {
		return e.Cwd
	}
	cwd := filepath.Clean(e.Cwd)
	if r, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = r
	}
	for _, d := range append([]string{cwd}, parents(Env{Cwd: cwd, GOOS: e.GOOS})...) {
		if exists(filepath.Join(d, ".git")) {
			return d
		}
	}
	return cwd
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
