package harness

import (
	"errors"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// Report is what `hub import --dry-run --json` prints. It names the
// variables and headers that hold credentials, never their values.
type Report struct {
	Servers    []ReportServer `json:"servers"`
	Skills     map[string]int `json:"skills"`
	Unreadable []Unreadable   `json:"unreadable"`
}

// ReportServer is one proposal in a Report.
type ReportServer struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	Command   string   `json:"command"`
	Args      []string `json:"args"`
	Cwd       string   `json:"cwd,omitempty"` // where it runs (a project's server naming its files)
	URL       string   `json:"url"`
	Disabled  bool     `json:"disabled"`
	Harnesses []Origin `json:"harnesses"`
	Secrets   []string `json:"secrets"`
	// Existing is set when the server already is a source of the hub
	// (under Namespace): it is not added again.
	Existing bool `json:"existing,omitempty"`
	// Notes say what of the server does not carry over as written (a
	// header the harness fills in, a credential left in an argument),
	// as the import that adds it says.
	Notes []string `json:"notes,omitempty"`
	// Filled says which values were filled in from the environment, as
	// the harness does ("args[0] from $SCRIPTS"): names, never values.
	Filled []string `json:"filled,omitempty"`
}

// NewReport gathers the proposals and what else the scan found.
func NewReport(props []Proposal, sc *Scan) Report {
	r := Report{Servers: []ReportServer{}, Skills: sc.Skills, Unreadable: sc.Unreadable}
	if r.Skills == nil {
		r.Skills = map[string]int{}
	}
	if r.Unreadable == nil {
		r.Unreadable = []Unreadable{}
	}
	for _, p := range props {
		s := p.Server
		secrets, args := p.Secrets, s.Args
		if secrets == nil {
			secrets = []string{}
		}
		if args == nil {
			args = []string{}
		}
		// A credential in an argument or the URL (written there, or filled
		// in from a variable) is masked: the report names, never holds.
		args = model.RedactArgs(args)
		var notes []string
		if p.ExistingNote != "" {
			notes = append(notes, p.ExistingNote)
		}
		if p.Existing == "" && !s.Disabled {
			var err error
			_, notes, err = p.Request() // an error for two credentials is the secrets' line
			if errors.Is(err, ErrSSE) || errors.Is(err, ErrUnset) {
				notes = append(notes, err.Error())
			}
		}
		r.Servers = append(r.Servers, ReportServer{
			Namespace: p.Namespace, Name: s.Name, Kind: s.Kind, Command: s.Command, Args: args, Cwd: s.Cwd, URL: model.Redact("URL", s.URL),
			Disabled: s.Disabled, Harnesses: p.Origins, Secrets: secrets, Existing: p.Existing != "", Notes: notes, Filled: s.FilledFrom(),
		})
	}
	return r
}
