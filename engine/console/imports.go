package console

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/skill"
)

// The Review screen also offers what `hub import` would bring in from the
// agents' own folders: their skills, each with its name and description.
// Importing from the page copies the chosen ones into the hub, as `hub
// import` does. (Servers the agents gain are offered by the desktop app,
// which then opens the Review screen for their tools.)

// ImportSkill is one skill found in an agent's skills folder.
type ImportSkill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Harness     string `json:"harness"`
	Path        string `json:"path"`
	// Status: import (importing copies it in), in-hub (the hub has the
	// same files), clash (another skill of that name), unreadable.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Imports is GET /api/import.
type Imports struct {
	Skills []ImportSkill `json:"skills"`
}

// importChoice is POST /api/import: the skills to import, by name.
type importChoice struct {
	Skills []string `json:"skills"`
}

// Imported is what POST /api/import answers: the skills copied in, and
// what the agents' folders hold now.
type Imported struct {
	Imported []string      `json:"imported"`
	Skills   []ImportSkill `json:"skills"`
}

// skillFolders are the agents' skills folders: Options.SkillFolders, else
// every harness's on this machine.
func (c *Handler) skillFolders() ([]skill.Folder, error) {
	if c.opts.SkillFolders != nil {
		return c.opts.SkillFolders(), nil
	}
	env, err := harness.FromOS()
	if err != nil {
		return nil, err
	}
	var out []skill.Folder
	for _, h := range harness.All() {
		out = append(out, skill.Folder{Harness: h.Name, Dir: h.SkillsDir(env)})
	}
	return out, nil
}

// findSkills is what importing the agents' skills would do now.
func (c *Handler) findSkills() ([]skill.Found, skill.Store, error) {
	st, ok := c.hub.Skills()
	if !ok {
		return nil, st, fmt.Errorf("this hub keeps no skills")
	}
	folders, err := c.skillFolders()
	if err != nil {
		return nil, st, err
	}
	return skill.Find(folders, st), st, nil
}

func importRows(found []skill.Found) []ImportSkill {
	out := []ImportSkill{}
	for _, f := range found {
		out = append(out, ImportSkill{Name: f.Name, Description: f.Description, Harness: f.Harness, Path: f.Path, Status: f.Status, Error: f.Error})
	}
	return out
}

func (c *Handler) imports(w http.ResponseWriter, r *http.Request) {
	found, _, err := c.findSkills()
	if err != nil {
		c.internal(w, "reading the agents' skills", err)
		return
	}
	WriteJSON(w, http.StatusOK, Imports{Skills: importRows(found)})
}

func (c *Handler) importSkills(w http.ResponseWriter, r *http.Request) {
	if refuseOnRunPage(w, c.opts.Run, "import with `capabilities hub console` or `capabilities hub import`") {
		return
	}
	var ch importChoice
	if !readJSON(w, r, &ch) {
		return
	}
	if len(ch.Skills) == 0 {
		Fail(w, http.StatusBadRequest, "bad_request", "name the skills to import: {\"skills\": [\"name\", …]}")
		return
	}
	found, st, err := c.findSkills()
	if err != nil {
		c.internal(w, "reading the agents' skills", err)
		return
	}
	// Every name must be one to import now, or nothing is imported.
	for _, name := range ch.Skills {
		i := slices.IndexFunc(found, func(f skill.Found) bool { return f.Name == name && f.Status == skill.FoundImport })
		if i >= 0 {
			continue
		}
		if slices.ContainsFunc(found, func(f skill.Found) bool { return f.Name == name }) {
			Fail(w, http.StatusConflict, "changed", fmt.Sprintf("the skill %s is not one to import any more (the hub has it, or another of that name): read the list again", name))
			return
		}
		Fail(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("no agent's skills folder holds a skill %s", name))
		return
	}
	var done []string
	for i := range found {
		if found[i].Status != skill.FoundImport || !slices.Contains(ch.Skills, found[i].Name) {
			continue
		}
		if err := st.Import(&found[i]); err != nil {
			c.internal(w, "importing skills", err)
			return
		}
		done = append(done, found[i].Name)
	}
	c.log.Info("skills imported", "skills", done, "channel", c.opts.Channel)
	again, _, err := c.findSkills()
	if err != nil {
		c.internal(w, "reading the agents' skills", err)
		return
	}
	WriteJSON(w, http.StatusOK, Imported{Imported: done, Skills: importRows(again)})
}
