package mcpserver

import (
	"os"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestMain fails the package's tests when they leave a process running
// (testenv.RunLeavingNothing).
func TestMain(m *testing.M) { os.Exit(testenv.RunLeavingNothing(m)) }
