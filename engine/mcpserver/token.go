package mcpserver

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/capabilities-sh/capabilities/store"
)

// TokenFile is the bearer token of the loopback HTTP endpoint, in the store
// directory (mode 600).
const TokenFile = "http-token"

// HTTPToken reads the bearer token in the store directory dir, creating it
// (mode 600) on first serve; created says it did. Every long-running hub
// (`serve --http`, the desktop app) serves with it.
func HTTPToken(dir string) (tok string, created bool, err error) {
	p := filepath.Join(dir, TokenFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return "", false, fmt.Errorf("creating the HTTP token: %w", err)
		}
		if err := store.WriteFileAtomic(p, []byte(hex.EncodeToString(k)+"\n")); err != nil {
			return "", false, fmt.Errorf("creating the HTTP token: %w", err)
		}
		created = true
		b, err = os.ReadFile(p)
	}
	if err != nil {
		return "", created, fmt.Errorf("reading the HTTP token: %w", err)
	}
	tok = strings.TrimSpace(string(b))
	if len(tok) < 32 {
		return "", created, fmt.Errorf("the HTTP token in %s is too short; remove the file and serve again to make a new one", p)
	}
	return tok, created, nil
}
