package toolfetch

import (
	"github.com/contextd/contextd/toolmanifest"
	"github.com/contextd/contextd/toolstore"
)

// Listed is one installed tool as `contextd tool list` shows it.
type Listed struct {
	toolstore.Tool
	Description string   `json:"description,omitempty"`
	Permissions []string `json:"permissions"`
	// Problem is why the tool's approved manifest cannot be read, if it
	// cannot.
	Problem string `json:"problem,omitempty"`
}

// List reads the store's lock and each tool's approved manifest.
func List(s toolstore.Store) ([]Listed, error) {
	lock, err := s.Load()
	if err != nil {
		return nil, err
	}
	out := []Listed{}
	for _, n := range lock.Names() {
		t := lock.Tools[n]
		l := Listed{Tool: *t, Permissions: []string{}}
		if m, err := s.Approved(t); err != nil {
			l.Problem = err.Error()
		} else {
			l.Description, l.Permissions = m.Description, toolmanifest.Permissions(m)
		}
		out = append(out, l)
	}
	return out, nil
}
