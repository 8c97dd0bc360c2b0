package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeSkill writes a skill's files under h.work/<folder> and returns the
// folder.
func writeSkill(t *testing.T, h *hubEnv, folder string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(h.work, folder)
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type resourceList struct {
	Resources []struct {
		URI, Name, Description, MimeType string
	}
}

type resourceRead struct {
	Contents []struct{ URI, MimeType, Text string }
}

type skillEntry struct {
	URI         string
	Frontmatter map[string]any
	Resources   []struct {
		URI, Digest string
		Size        int
	}
}

func decodeStep[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return v
}

func uris(l resourceList) []string {
	var out []string
	for _, r := range l.Resources {
		out = append(out, r.URI)
	}
	slices.Sort(out)
	return out
}

// TestSkillsExtensionSDK1: the real TypeScript SDK client over serve
// --stdio sees the MCP Skills extension (SEP-2640) declared with the
// resources capability; resources/list has every file of every skill at
// skill://<name>/<file> (SKILL.md with the skill's name, description and
// text/markdown); resources/read gives a file's bytes; skills/list and
// skills/get give each skill's front matter and every file's SHA-256
// digest and size, and skills/get of a skill the server does not serve is
// -32602. A skill added with `hub skills add` while the session is open
// sends resources/list_changed and is listed. Through a profile that lists
// one skill, only that skill's files are resources, and the other is not
// readable.
func TestSkillsExtensionSDK1(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	h.addScripted("reader", false)
	doc := "---\nname: pdf-forms\ndescription: Fill PDF forms.\nlicense: Apache-2.0\n---\n# PDF forms\n\nRead reference.md first.\n"
	h.cli("hub", "skills", "add", writeSkill(t, h, "pdf-forms", map[string]string{"SKILL.md": doc, "reference.md": "Field names are case-sensitive.\n", "scripts/fill.py": "print(1)\n"}))
	h.cli("hub", "skills", "add", writeSkill(t, h, "notes", map[string]string{"SKILL.md": "---\nname: notes\ndescription: Take notes.\n---\n# Notes\n"}))
	later := writeSkill(t, h, "release-notes", map[string]string{"SKILL.md": "---\nname: release-notes\ndescription: Write release notes.\n---\n"})
	h.cli("hub", "profiles", "add", "docs", "--namespace", "reader", "--skill", "pdf-forms")

	var all planOut
	h.client(&all, nil, "profile_stdio.mjs", "-", plan(t,
		map[string]any{"list": "resources"},
		map[string]any{"read": "skill://pdf-forms/SKILL.md"},
		map[string]any{"request": "skills/list"},
		map[string]any{"request": "skills/get", "params": map[string]string{"uri": "skill://pdf-forms/SKILL.md"}},
		map[string]any{"request": "skills/get", "params": map[string]string{"uri": "skill://ghost/SKILL.md"}},
		map[string]any{"read": "skill://ghost/SKILL.md"},
		map[string]any{"run": []string{"hub", "skills", "add", later}},
		map[string]any{"waitResources": 1},
		map[string]any{"list": "resources"},
	))
	ext, _ := all.Capabilities["extensions"].(map[string]any)
	res, _ := all.Capabilities["resources"].(map[string]any)
	if ext["io.modelcontextprotocol/skills"] == nil || res["listChanged"] != true {
		t.Errorf("capabilities %v: want the skills extension and resources.listChanged", all.Capabilities)
	}
	list := decodeStep[resourceList](t, all.Steps[0])
	if diff := cmp.Diff([]string{"skill://notes/SKILL.md", "skill://pdf-forms/SKILL.md", "skill://pdf-forms/reference.md", "skill://pdf-forms/scripts/fill.py"}, uris(list)); diff != "" {
		t.Errorf("resources/list (-want +got):\n%s", diff)
	}
	for _, r := range list.Resources {
		if r.URI == "skill://pdf-forms/SKILL.md" && (r.Name != "pdf-forms" || r.Description != "Fill PDF forms." || r.MimeType != "text/markdown") {
			t.Errorf("SKILL.md's resource: %+v", r)
		}
	}
	if rd := decodeStep[resourceRead](t, all.Steps[1]); len(rd.Contents) != 1 || rd.Contents[0].Text != doc || rd.Contents[0].MimeType != "text/markdown" {
		t.Errorf("resources/read SKILL.md: %+v", rd)
	}
	skills := decodeStep[struct {
		Skills     []skillEntry
		CacheScope string
	}](t, all.Steps[2])
	if len(skills.Skills) != 2 || skills.CacheScope == "" {
		t.Fatalf("skills/list: %s", all.Steps[2])
	}
	got := decodeStep[struct{ Skill skillEntry }](t, all.Steps[3]).Skill
	sum := sha256.Sum256([]byte(doc))
	if got.URI != "skill://pdf-forms/SKILL.md" || got.Frontmatter["license"] != "Apache-2.0" || got.Frontmatter["description"] != "Fill PDF forms." || len(got.Resources) != 3 {
		t.Errorf("skills/get pdf-forms: %+v", got)
	}
	if i := slices.IndexFunc(got.Resources, func(r struct {
		URI, Digest string
		Size        int
	}) bool {
		return r.URI == got.URI
	}); i < 0 || got.Resources[i].Digest != "sha256:"+hex.EncodeToString(sum[:]) || got.Resources[i].Size != len(doc) {
		t.Errorf("skills/get: SKILL.md's digest and size: %+v", got.Resources)
	}
	if diff := cmp.Diff(got, skills.Skills[slices.IndexFunc(skills.Skills, func(e skillEntry) bool { return e.URI == got.URI })]); diff != "" {
		t.Errorf("skills/list and skills/get differ (-get +list):\n%s", diff)
	}
	for _, i := range []int{4, 5} {
		if e := decodeStep[struct{ Error string }](t, all.Steps[i]); e.Error == "" {
			t.Errorf("step %d on a skill the hub does not have: %s", i, all.Steps[i])
		}
	}
	if e := decodeStep[struct{ Error string }](t, all.Steps[4]); !strings.Contains(e.Error, "-32602") {
		t.Errorf("skills/get of an unknown skill: %q, want -32602", e.Error)
	}
	if after := uris(decodeStep[resourceList](t, all.Steps[8])); !slices.Contains(after, "skill://release-notes/SKILL.md") {
		t.Errorf("resources/list after hub skills add: %v", after)
	}

	var docs planOut
	h.client(&docs, nil, "profile_stdio.mjs", "docs", plan(t,
		map[string]any{"list": "resources"},
		map[string]any{"read": "skill://notes/SKILL.md"},
		map[string]any{"request": "skills/list"},
	))
	if diff := cmp.Diff([]string{"skill://pdf-forms/SKILL.md", "skill://pdf-forms/reference.md", "skill://pdf-forms/scripts/fill.py"}, uris(decodeStep[resourceList](t, docs.Steps[0]))); diff != "" {
		t.Errorf("resources/list through profile docs (-want +got):\n%s", diff)
	}
	if e := decodeStep[struct{ Error string }](t, docs.Steps[1]); e.Error == "" {
		t.Errorf("a skill outside the profile was readable: %s", docs.Steps[1])
	}
	if s := decodeStep[struct{ Skills []skillEntry }](t, docs.Steps[2]); len(s.Skills) != 1 || s.Skills[0].URI != "skill://pdf-forms/SKILL.md" {
		t.Errorf("skills/list through profile docs: %s", docs.Steps[2])
	}
}
