package store

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// What happened to a hub while a process served it (Gone).
const (
	HubDeleted  = "was deleted or moved away"
	HubReplaced = "was replaced by another hub"
)

// Gone says what happened to the hub at dir since a process opened it (its
// hub.json said id): "" while it is there, or when that cannot be told now
// (hub.json unreadable for a moment is not taken for gone), else HubDeleted
// or HubReplaced. A hub set up there since is another hub, even in a folder
// of the same inode. Nothing a process holds keeps a hub's folder: every
// record is read and written by path.
func Gone(dir, id string) string {
	b, err := os.ReadFile(filepath.Join(dir, "hub.json"))
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		// The folder, or only its hub.json (rm -rf caught halfway): no
		// hub is there any more.
		return HubDeleted
	case err != nil:
		return ""
	}
	var h Hub
	if json.Unmarshal(b, &h) != nil || h.ID == "" || id == "" || h.ID == id {
		return ""
	}
	return HubReplaced
}
