package packaging

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestBuildMetadata checks that the window's wails.json and the platform files in build/
// name the desktop binary, the binary's version and paths that exist, so a
// `wails build` (or a hand-made .app) gets what this repository builds.
func TestBuildMetadata(t *testing.T) {
	root := testenv.Root(t)
	read := func(rel string) []byte {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	v := mcpserver.Version

	var wails map[string]any
	// The Wails CLI builds the package beside wails.json: the window's.
	wailsDir := filepath.Join(root, "cmd", "capabilities-window")
	if err := json.Unmarshal(read("cmd/capabilities-window/wails.json"), &wails); err != nil {
		t.Fatalf("decoding wails.json: %v", err)
	}
	info, _ := wails["info"].(map[string]any)
	got := map[string]any{
		"name": wails["name"], "outputfilename": wails["outputfilename"],
		"frontend:dir": wails["frontend:dir"], "build:dir": wails["build:dir"],
		"frontend:build": wails["frontend:build"], "frontend:install": wails["frontend:install"],
		"info.productVersion": info["productVersion"],
	}
	want := map[string]any{
		"name": "capabilities", "outputfilename": "capabilities-window",
		"frontend:dir": "../../frontend", "build:dir": "../../build",
		"frontend:build": "", "frontend:install": "", // the frontend has no build step
		"info.productVersion": v,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("wails.json (-want +got):\n%s", diff)
	}
	for _, rel := range []string{"../../frontend/index.html", "../../build/appicon.png", "../../build/windows/icon.ico", "../../build/darwin/Info.plist", "../../build/windows/wails.exe.manifest", "../../build/windows/info.json"} {
		if _, err := os.Stat(filepath.Join(wailsDir, rel)); err != nil {
			t.Errorf("wails.json's layout needs %s: %v", rel, err)
		}
	}

	plist := plistStrings(t, read("build/darwin/Info.plist"))
	if diff := cmp.Diff(map[string]string{
		"CFBundleExecutable": "capabilities-desktop", "CFBundleVersion": v, "CFBundleShortVersionString": v,
	}, map[string]string{
		"CFBundleExecutable": plist["CFBundleExecutable"], "CFBundleVersion": plist["CFBundleVersion"], "CFBundleShortVersionString": plist["CFBundleShortVersionString"],
	}); diff != "" {
		t.Errorf("Info.plist (-want +got):\n%s", diff)
	}

	var manifest struct {
		Identity struct {
			Version string `xml:"version,attr"`
		} `xml:"assemblyIdentity"`
	}
	if err := xml.Unmarshal(read("build/windows/wails.exe.manifest"), &manifest); err != nil {
		t.Fatalf("decoding the Windows manifest: %v", err)
	}
	if manifest.Identity.Version != v+".0" {
		t.Errorf("the Windows manifest's version is %q, want %q", manifest.Identity.Version, v+".0")
	}
	var winInfo struct {
		Fixed struct {
			FileVersion string `json:"file_version"`
		} `json:"fixed"`
		Info map[string]map[string]string `json:"info"`
	}
	if err := json.Unmarshal(read("build/windows/info.json"), &winInfo); err != nil {
		t.Fatalf("decoding build/windows/info.json: %v", err)
	}
	if winInfo.Fixed.FileVersion != v || winInfo.Info["0000"]["ProductVersion"] != v {
		t.Errorf("build/windows/info.json names version %q / %q, want %q", winInfo.Fixed.FileVersion, winInfo.Info["0000"]["ProductVersion"], v)
	}
}

// plistStrings reads a property list's top-level <key>/<string> pairs.
func plistStrings(t *testing.T, data []byte) map[string]string {
	t.Helper()
	var doc struct {
		Dict struct {
			Items []struct {
				XMLName xml.Name
				Text    string `xml:",chardata"`
			} `xml:",any"`
		} `xml:"dict"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("decoding Info.plist: %v", err)
	}
	out := map[string]string{}
	items := doc.Dict.Items
	for i := 0; i+1 < len(items); i++ {
		if items[i].XMLName.Local == "key" && items[i+1].XMLName.Local == "string" {
			out[items[i].Text] = items[i+1].Text
		}
	}
	return out
}
