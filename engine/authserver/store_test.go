package authserver_test

import (
	"testing"

	"github.com/capabilities-sh/capabilities/engine/authserver"
	"github.com/capabilities-sh/capabilities/engine/authserver/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) authserver.Store { return authserver.NewMemory() })
}
