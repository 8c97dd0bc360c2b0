package browser

import (
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestArgv: which browser opens a page, or why none can.
func TestArgv(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		argv     []string
		whyParts string
	}{
		{"turned off wins", map[string]string{"CAPABILITIES_NO_BROWSER": "1", "CAPABILITIES_BROWSER": "firefox"}, nil, "CAPABILITIES_NO_BROWSER=1"},
		{"CAPABILITIES_BROWSER first", map[string]string{"CAPABILITIES_BROWSER": "my-browser --new-window", "BROWSER": "firefox"}, []string{"my-browser", "--new-window"}, ""},
		{"$BROWSER's first entry", map[string]string{"BROWSER": "w3m:lynx"}, []string{"w3m"}, ""},
		{"no display, nothing configured", map[string]string{}, nil, "no display"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"CAPABILITIES_NO_BROWSER", "CAPABILITIES_BROWSER", "BROWSER", "DISPLAY", "WAYLAND_DISPLAY"} {
				t.Setenv(k, tc.env[k])
			}
			if tc.argv == nil && tc.whyParts == "no display" && (runtime.GOOS == "darwin" || runtime.GOOS == "windows") {
				t.Skip("macOS and Windows open pages without a display variable")
			}
			argv, why, err := Argv()
			if diff := cmp.Diff(tc.argv, argv); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
			if (err != nil) != (tc.whyParts != "") || !strings.Contains(why, tc.whyParts) {
				t.Errorf("why = %q, err = %v; want a reason with %q", why, err, tc.whyParts)
			}
		})
	}
}
