package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRunOpeningTheHub: a hub that is missing or whose hub.json is corrupt
// stops the app with the store's own message, as the CLI prints it: once,
// and `hub init` offered only where there is no hub.
func TestRunOpeningTheHub(t *testing.T) {
	t.Setenv("DISPLAY", ":999")
	missing := t.TempDir()
	corrupt := t.TempDir()
	if err := os.MkdirAll(filepath.Join(corrupt, "hub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(corrupt, "hub", "hub.json"), []byte(`{"schema": 1, `), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, home string
		want       string
	}{
		{"missing", missing, "opening the hub: no hub here at " + filepath.Join(missing, "hub") + "; run `capabilities hub init` first"},
		{"corrupt", corrupt, "opening the hub: reading " + filepath.Join(corrupt, "hub", "hub.json") + ": the record is corrupt (invalid JSON at line 1, column 15: unexpected end of JSON input); fix the file by hand or remove it and re-create the record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CAPABILITIES_HOME", tt.home)
			err := Run(context.Background(), Options{Stderr: &strings.Builder{}})
			if err == nil {
				t.Fatal("Run opened a hub that is not there")
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("Run's error (-want +got):\n%s", diff)
			}
		})
	}
}
