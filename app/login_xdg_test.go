//go:build !darwin && !windows

package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLoginEntryNamesTheHub: "Start at login" on a hub that is not at the
// default place writes an entry that starts the app on that hub (it used
// to start it on ~/.capabilities, which at the next login opened another
// hub or none); a home the Exec line cannot carry as it is is refused.
func TestLoginEntryNamesTheHub(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(self, " \t\n\"'\\`$%") {
		t.Skipf("the test binary's path %q cannot be an Exec", self)
	}
	t.Setenv("PATH", t.TempDir())
	home := t.TempDir()
	t.Setenv("HOME", home)
	other := filepath.Join(t.TempDir(), "hubs", "work")
	tests := []struct {
		name, capHome string
		want, err     string
	}{
		{"default", "", "Exec=" + self, ""},
		{"default named", filepath.Join(home, ".capabilities"), "Exec=" + self, ""},
		{"other", other, "Exec=env CAPABILITIES_HOME=" + other + " " + self, ""},
		{"a blank", filepath.Join(home, "my hubs"), "", "holds a character an autostart entry's Exec cannot carry"},
		{"a percent", filepath.Join(home, "100%"), "", "holds a character an autostart entry's Exec cannot carry"},
	}
	execLine := regexp.MustCompile(`(?m)^Exec=.*$`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CAPABILITIES_HOME", tt.capHome)
			entry, err := loginEntry()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("loginEntry: %v, want an error saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, execLine.FindString(string(entry))); diff != "" {
				t.Errorf("the entry's Exec (-want +got):\n%s\n%s", diff, entry)
			}
			if !strings.Contains(string(entry), "\nTryExec="+self+"\n") {
				t.Errorf("the entry's TryExec is not this program:\n%s", entry)
			}
		})
	}
}
