package app

import (
	"bytes"
	"encoding/xml"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLaunchAgent: the macOS LaunchAgent is a well-formed property list
// that runs the app by its path once at login (any path, escaped), on the
// hub it was turned on for (CAPABILITIES_HOME when not the default), and
// does not restart it after a Quit.
func TestLaunchAgent(t *testing.T) {
	for _, tt := range []struct{ exe, home string }{
		{"/Applications/Capabilities.app/Contents/MacOS/capabilities-desktop", ""},
		{"/Users/a & b/<odd> \"path\"/capabilities-desktop", ""},
		{"/Applications/Capabilities.app/Contents/MacOS/capabilities-desktop", "/Users/a & b/hubs/<work>"},
	} {
		exe := tt.exe
		doc := launchAgent(exe, tt.home)
		var plist struct {
			XMLName xml.Name `xml:"plist"`
			Dict    struct {
				Inner []byte `xml:",innerxml"`
			} `xml:"dict"`
		}
		if err := xml.Unmarshal(doc, &plist); err != nil {
			t.Fatalf("the LaunchAgent for %q is not well-formed XML: %v\n%s", exe, err, doc)
		}
		// The dict's entries, key then value, in order.
		dec := xml.NewDecoder(bytes.NewReader(plist.Dict.Inner))
		var got []string
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			switch v := tok.(type) {
			case xml.StartElement:
				if v.Name.Local == "true" || v.Name.Local == "false" {
					got = append(got, v.Name.Local)
				}
			case xml.CharData:
				if s := string(bytes.TrimSpace(v)); s != "" {
					got = append(got, s)
				}
			}
		}
		want := []string{"Label", launchAgentLabel, "ProgramArguments", exe}
		if tt.home != "" {
			want = append(want, "EnvironmentVariables", "CAPABILITIES_HOME", tt.home)
		}
		want = append(want, "RunAtLoad", "true", "KeepAlive", "false", "ProcessType", "Interactive")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the LaunchAgent for %q (-want +got):\n%s\n%s", exe, diff, doc)
		}
	}
}
