// Package frontend holds the console's screens as web assets: plain ES
// modules and CSS with no build step, embedded in the binaries. Type-checked
// by tsc --checkJs --strict in engine/console's tests (tsconfig.json).
package frontend

import (
	"embed"
	"io/fs"
)

//go:embed index.html *.js *.css
var files embed.FS

// Files are the assets, served from the root of the console.
func Files() fs.FS { return files }
