package harness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// GeminiTrust says whether Gemini CLI trusts the folder dir, as Gemini CLI
// 0.61.0 decides it (packages/core utils/trust.js checkPathTrust, cli
// config/settings.js loadSettings): in a folder it does not trust it
// starts no MCP server, its user-level ones included, and `gemini mcp list`
// shows each as "Disabled". When it does not, why says what makes it so and
// fix what the person can do. In order:
//   - GEMINI_RESTRICTED_MODE=true or GEMINI_CLI_TRUST_WORKSPACE=false: not
//     trusted; GEMINI_CLI_TRUST_WORKSPACE=true: trusted;
//   - security.folderTrust.enabled (on unless a settings file turns it off:
//     the system defaults, then ~/.gemini/settings.json, then the system
//     settings, the later winning; a system file not owned by root, or
//     that others can write, or under such a folder, Gemini skips): off,
//     every folder is trusted;
//   - ~/.gemini/trustedFolders.json (GEMINI_CLI_TRUSTED_FOLDERS_PATH): the
//     rule of the longest path holding dir decides (TRUST_FOLDER: that
//     folder and below; TRUST_PARENT: its parent and below; DO_NOT_TRUST);
//     no rule: not trusted.
//
// An IDE companion can also tell Gemini a folder is trusted; that is not
// seen here.
func GeminiTrust(e Env, dir string) (trusted bool, why, fix string) {
	switch {
	case e.get("GEMINI_RESTRICTED_MODE") == "true":
		return false, "GEMINI_RESTRICTED_MODE=true is set", "unset GEMINI_RESTRICTED_MODE"
	case e.get("GEMINI_CLI_TRUST_WORKSPACE") == "false":
		return false, "GEMINI_CLI_TRUST_WORKSPACE=false is set", "unset GEMINI_CLI_TRUST_WORKSPACE"
	case e.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
		return true, "", ""
	}
	home := e.get("GEMINI_CLI_HOME")
	if home == "" {
		home = e.Home
	}
	user := filepath.Join(home, ".gemini", "settings.json")
	system := e.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
	if system == "" {
		switch e.goos() {
		case "darwin":
			system = "/Library/Application Support/GeminiCli/settings.json"
		case "windows":
			system = `C:\ProgramData\gemini-cli\settings.json`
		default:
			system = "/etc/gemini-cli/settings.json"
		}
	}
	defaults := e.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH")
	if defaults == "" {
		defaults = filepath.Join(filepath.Dir(system), "system-defaults.json")
	}
	enabled, from := true, ""
	for _, p := range []string{defaults, user, system} {
		if p != user && !systemFileSecure(p) {
			continue // Gemini skips it ("Security Warning: Skipping system settings file")
		}
		if v, ok := folderTrustSetting(p); ok {
			enabled, from = v, p
		}
	}
	if !enabled {
		return true, "", ""
	}
	setting := "security.folderTrust.enabled is on by default"
	if from != "" {
		setting = "security.folderTrust.enabled is true in " + from
	}
	off := fmt.Sprintf("or turn folder trust off for every folder: \"security\": {\"folderTrust\": {\"enabled\": false}} in %s", user)
	folders := e.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
	if folders == "" {
		folders = filepath.Join(home, ".gemini", "trustedFolders.json")
	}
	trust := fmt.Sprintf("run gemini in %s and choose \"Trust folder\" (or /permissions trust there), or add \"%s\": \"TRUST_FOLDER\" to %s, %s", dir, dir, folders, off)
	b, err := os.ReadFile(folders)
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Sprintf("%s and %s does not exist: Gemini trusts no folder yet", setting, folders), trust
	}
	if err != nil {
		return false, fmt.Sprintf("%s, and %s does not read: %v", setting, folders, err), "make " + folders + " readable"
	}
	doc, err := Decode(JSONC, b)
	if err != nil {
		return false, fmt.Sprintf("%s is not valid JSON (Gemini CLI refuses to start: %v)", folders, err), "fix " + folders
	}
	target := realPath(dir)
	best, level := "", ""
	for rule, v := range doc {
		l, _ := v.(string)
		switch l {
		case "TRUST_FOLDER", "DO_NOT_TRUST", "TRUST_PARENT":
		default:
			return false, fmt.Sprintf("%s gives %q the trust level %v, not one of TRUST_FOLDER, TRUST_PARENT, DO_NOT_TRUST (Gemini CLI refuses to start)", folders, rule, v), "fix " + folders
		}
		eff := rule
		if l == "TRUST_PARENT" {
			eff = filepath.Dir(rule)
		}
		rel, err := filepath.Rel(realPath(eff), target)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		if len(rule) > len(best) {
			best, level = rule, l
		}
	}
	switch level {
	case "TRUST_FOLDER", "TRUST_PARENT":
		return true, "", ""
	case "DO_NOT_TRUST":
		return false, fmt.Sprintf("%s marks %s DO_NOT_TRUST", folders, best), fmt.Sprintf("change that rule in %s to TRUST_FOLDER (or /permissions trust in gemini there), %s", folders, off)
	}
	return false, fmt.Sprintf("%s and %s does not trust this folder", setting, folders), trust
}

// folderTrustSetting reads security.folderTrust.enabled from a Gemini
// settings file; ok is false when the file or the key is not there.
func folderTrustSetting(path string) (enabled, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, false
	}
	doc, err := Decode(JSONC, b)
	if err != nil {
		return false, false
	}
	v, _ := at(doc, []string{"security", "folderTrust", "enabled"})
	enabled, ok = v.(bool)
	return enabled, ok
}

// systemFileSecure reports whether Gemini CLI reads the system settings
// file p: it and every folder above it are owned by root and writable by
// no group or other user (isFileAndDirectorySecureSync).
func systemFileSecure(p string) bool {
	p, err := filepath.Abs(p)
	if err != nil {
		return false
	}
	for d := p; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || !rootOwned(fi) || fi.Mode().Perm()&0o022 != 0 {
			return false
		}
		if filepath.Dir(d) == d {
			return true
		}
	}
}

// realPath is p with its symlinks resolved, when it exists (as Gemini's
// getRealPath).
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}
