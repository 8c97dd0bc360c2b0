package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/harness"
)

// instruction is what to add by hand to a harness connect does not write.
type instruction struct {
	Harness string `json:"harness"`
	Path    string `json:"path"`
	Key     string `json:"key"`   // where the entry goes
	Entry   string `json:"entry"` // the text to add, in the file's format
}

// instructions lists the harnesses connect does not write whose config (or
// its directory) exists, or that are named in clients, with the entry to
// add by hand.
func instructions(clients []string, bin, profile, remote string, vars map[string]string) []instruction {
	env, err := harness.FromOS()
	if err != nil {
		return nil
	}
	want := map[string]bool{}
	for _, c := range clients {
		want[c] = true
	}
	var out []instruction
	for _, h := range harness.All() {
		if h.Connect || (len(want) > 0 && !want[h.Name]) {
			continue
		}
		for _, f := range h.Files(env) {
			if f.Project {
				continue
			}
			_, ferr := os.Stat(f.Path)
			_, derr := os.Stat(filepath.Dir(f.Path))
			if ferr != nil && !want[h.Name] && (derr != nil || filepath.Dir(f.Path) == env.Home) {
				continue
			}
			out = append(out, instruction{Harness: h.Name, Path: f.Path, Key: strings.Join(f.ServersKey, "."), Entry: entryTextTo(f.Format, bin, profile, remote, vars)})
			break // the first file the harness reads is enough
		}
	}
	return out
}

// entryText is the hub's entry written as the harness's format wants it.
func entryText(format harness.Format, bin, profile string, env map[string]string) string {
	return entryTextTo(format, bin, profile, "", env)
}

// entryTextTo is entryText for the hub at remote ("": this machine's).
func entryTextTo(format harness.Format, bin, profile, remote string, env map[string]string) string {
	entryName, _ := profileEntry(profile)
	args := entryArgs(profile, remote)
	if format == harness.YAML {
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = q(a)
		}
		text := fmt.Sprintf("%s:\n  command: %s\n  args: [%s]\n", entryName, q(bin), strings.Join(quoted, ", "))
		if len(env) > 0 {
			text += "  env:\n"
			keys := make([]string, 0, len(env))
			for k := range env {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				text += fmt.Sprintf("    %s: %s\n", k, q(env[k]))
			}
		}
		return text
	}
	value := map[string]any{"command": bin, "args": args}
	if len(env) > 0 {
		value["env"] = env
	}
	b, _ := json.MarshalIndent(map[string]any{entryName: value}, "", "  ")
	text := strings.TrimSpace(string(b))
	text = strings.TrimSuffix(strings.TrimPrefix(text, "{"), "}")
	return strings.TrimSpace(dedent(text)) + "\n"
}

// indent puts prefix before every line of s.
func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

// dedent takes one level (two blanks) off every line.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	return strings.Join(lines, "\n")
}
