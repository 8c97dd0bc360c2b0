//go:build !unix

package harness

import "io/fs"

// rootOwned is true where files have no uid: Gemini CLI checks their ACLs
// there, which is not done here.
func rootOwned(fs.FileInfo) bool { return true }
