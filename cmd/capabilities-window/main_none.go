//go:build !desktop

// Command capabilities-window is the desktop app's window; this build has
// none: build it with go build -tags desktop,production,webkit2_41 (cgo,
// libgtk-3-dev, libwebkit2gtk-4.1-dev), as scripts/setup.sh does.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "--help" || os.Args[1] == "-h" || os.Args[1] == "-help") {
		fmt.Print(helpText)
		return
	}
	fmt.Fprintln(os.Stderr, "capabilities-window: built without the desktop tag, so without a window; build it with go build -tags desktop,production,webkit2_41 (scripts/setup.sh does)")
	os.Exit(1)
}
