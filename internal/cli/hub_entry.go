package cli

import (
	"os"
	"path/filepath"

	"github.com/capabilities-sh/capabilities/store"
)

// homeVar is the variable that says where the hub is.
const homeVar = "CAPABILITIES_HOME"

// hubEnv is the environment the hub's entry carries: CAPABILITIES_HOME (an
// absolute path) when the hub connect writes for is not at the default
// place, ~/.capabilities, so the agent's "hub serve --stdio" opens this hub
// and not another one (or none); nil for the default place, whose entry
// needs no variable.
func hubEnv() (map[string]string, error) {
	home, err := store.Home()
	if err != nil {
		return nil, err
	}
	if u, err := os.UserHomeDir(); err == nil && sameDir(home, filepath.Join(u, ".capabilities")) {
		return nil, nil
	}
	return map[string]string{homeVar: home}, nil
}

// sameDir reports whether a and b name the same directory: the same clean
// path, or (a symlink between them) the same file.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, erra := os.Stat(a)
	fb, errb := os.Stat(b)
	return erra == nil && errb == nil && os.SameFile(fa, fb)
}
