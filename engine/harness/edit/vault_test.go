package edit

import (
	"context"

	"github.com/capabilities-sh/capabilities/engine/secret"
)

// testVault is the secret store of the tests' snapshots.
var testVault = secret.NewMemory(nil)

// Apply and Rollback are Snaps{root, testVault}'s.
func Apply(root, kind string, changes []Change) (*Snapshot, []Result, error) {
	return Snaps{Root: root, Vault: testVault}.Apply(context.Background(), kind, changes)
}

func Rollback(root string, force bool) (*Snapshot, []Restored, error) {
	return Snaps{Root: root, Vault: testVault}.Rollback(context.Background(), force)
}
