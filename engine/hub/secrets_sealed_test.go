package hub_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// TestSealedSecretsAreScrubbed: with CAPABILITIES_KEK set, the hub seals
// credentials in its store, and the scrubber still knows every one: the
// credential of a source this run never called, read back by another
// source, reaches the result as [secret].
func TestSealedSecretsAreScrubbed(t *testing.T) {
	t.Setenv(secret.EnvKEKFile, "")
	t.Setenv(secret.EnvKEK, base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{NoKeychain: true})
	t.Cleanup(h.Close)
	ctx := context.Background()
	if _, ok := h.Secrets().(*secret.Sealed); !ok {
		t.Fatalf("Secrets() is %T, want *secret.Sealed", h.Secrets())
	}
	if s := h.SecretStatus(); !strings.HasPrefix(s, "sealed in the hub's store (AES-256-GCM; key-encryption key ") || !strings.HasSuffix(s, "from CAPABILITIES_KEK)") {
		t.Errorf("SecretStatus = %q", s)
	}
	dir := t.TempDir()
	addReviewed(t, h, hub.AddRequest{Command: testenv.Filesystem(t, dir), Namespace: "fs"}, hub.AddRequest{Command: testenv.Filesystem(t, dir), Namespace: "other"})
	const stored = "ghp_SealedAndNeverCalled-0123456789"
	if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: "other", Value: stored, Env: "OTHER_TOKEN"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(st.Dir(), "secrets.json")); !os.IsNotExist(err) {
		t.Errorf("the fallback file was written: %v", err)
	}
	file := filepath.Join(dir, "note.txt")
	if err := os.WriteFile(file, []byte("token: "+stored+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env, err := h.Execute(ctx, fmt.Sprintf(`return await fs.readTextFile({path: %q})`, file))
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" {
		t.Fatalf("run %s: %+v", env.Status, env.Error)
	}
	if got := string(env.Result); strings.Contains(got, stored) || !strings.Contains(got, "[secret]") {
		t.Errorf("the answer holds the sealed credential: %s", got)
	}

	// Without the key, a new hub over the same store says why it cannot
	// read the credential.
	t.Setenv(secret.EnvKEK, "")
	h2 := hub.New(st, hub.Options{NoKeychain: true})
	t.Cleanup(h2.Close)
	if _, err := h2.Secrets().Get(ctx, "other/default"); err == nil || !strings.Contains(err.Error(), "neither CAPABILITIES_KEK_FILE nor CAPABILITIES_KEK is set") {
		t.Errorf("Get without the key: %v", err)
	}
	if s := h2.SecretStatus(); !strings.HasPrefix(s, "sealed, and cannot be opened: ") {
		t.Errorf("SecretStatus without the key = %q", s)
	}
}
