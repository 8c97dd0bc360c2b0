package harness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Config is one harness config file as the census (`capabilities list` and
// `capabilities doctor`) read it: every file of every harness that exists,
// whether or not it parses. It only reads.
type Config struct {
	File File
	// Err is why the file could not be read: a *SyntaxError (with its line
	// and column) when it does not parse, or a read error; nil when it was
	// read. A file shared by several File entries (Claude Code's user and
	// local scopes in ~/.claude.json) carries its error on the first only.
	Err error
	// Doc is the decoded file (nil when Err is set).
	Doc map[string]any
	// Servers are the entries at File.ServersKey as written (not
	// expanded: ExpandServer fills in the harness's variables).
	Servers []Server
	// Problems are the entries that were not understood.
	Problems []Problem
	// KeyErr is set when the file parses but what is at File.ServersKey is
	// not an object of servers.
	KeyErr error
}

// Configs reads the config files of hs that exist, in the order of
// hs and their Files. A file is read and decoded once, however many
// File entries name it. A file that is missing is left out.
func Configs(env Env, hs []Harness) []Config {
	type decoded struct {
		doc map[string]any
		err error
	}
	cache := map[string]*decoded{}
	var out []Config
	for _, h := range hs {
		for _, f := range h.Files(env) {
			d, seen := cache[f.Path]
			if !seen {
				d = &decoded{}
				d.doc, d.err = readConfig(f)
				cache[f.Path] = d
			}
			if errors.Is(d.err, fs.ErrNotExist) {
				continue
			}
			c := Config{File: f, Doc: d.doc}
			if d.err != nil {
				if seen {
					continue // said once, with the file's first entry
				}
				c.Err = d.err
				out = append(out, c)
				continue
			}
			c.Servers, c.Problems, c.KeyErr = Servers(f, d.doc)
			out = append(out, c)
		}
	}
	return out
}

// EntryProfile is the profile a hub entry's arguments ("hub serve --stdio
// --profile NAME", or --profile=NAME) serve: "default" when none is named.
func EntryProfile(args []string) string {
	for i, a := range args {
		if a == "--profile" && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--profile="); ok {
			return v
		}
	}
	return "default"
}

// MissingCommand says why a stdio entry's command (as the harness would run
// it: expanded, see ExpandServer) cannot be started, without starting it:
// a path that names no file, a folder or a file that is not executable, or
// a bare name found in no folder of the PATH the server gets (its own env's
// PATH, else env's). "" when the command is there, or cannot be judged
// here: a reference to a variable left as written (${input:token}), an
// entry of another system (env.GOOS), or an HTTP entry.
func MissingCommand(env Env, s Server) string {
	cmd := s.Command
	if s.Kind != KindStdio || cmd == "" || strings.Contains(cmd, "$") || env.goos() == "windows" || env.goos() != runtime.GOOS {
		return ""
	}
	if strings.ContainsRune(cmd, '/') {
		p := cmd
		if !filepath.IsAbs(p) {
			dir := s.Cwd
			if dir == "" || strings.Contains(dir, "$") {
				dir = env.Cwd
			}
			if dir == "" || !filepath.IsAbs(dir) {
				return ""
			}
			p = filepath.Join(dir, p)
		}
		return notRunnable(p)
	}
	path, ok := s.Env["PATH"]
	if !ok || strings.Contains(path, "$") {
		path = env.get("PATH")
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) {
			continue // a relative PATH entry depends on where the agent starts it
		}
		if notRunnable(filepath.Join(dir, cmd)) == "" {
			return ""
		}
	}
	return fmt.Sprintf("%s is not on the PATH (%s)", cmd, shortPath(path))
}

// notRunnable says why the file p cannot be run, "" when it can.
func notRunnable(p string) string {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s does not exist", p)
	case err != nil:
		return fmt.Sprintf("%s cannot be read: %v", p, err)
	case fi.IsDir():
		return fmt.Sprintf("%s is a folder, not a program", p)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Sprintf("%s is not executable", p)
	}
	return ""
}

// shortPath is a PATH for a message: itself when it has at most three
// folders, else how many it has.
func shortPath(path string) string {
	dirs := filepath.SplitList(path)
	switch {
	case len(dirs) == 0:
		return "empty"
	case len(dirs) > 3:
		return fmt.Sprintf("%d folders searched", len(dirs))
	}
	return path
}
