package toolmanifest

import (
	"bytes"
	"fmt"

	"github.com/BurntSushi/toml"
)

// Encode writes m back as a manifest that Parse reads to an equal
// Manifest: the form kept with an approved install, limits and the schema
// written out in full.
func Encode(m *Manifest) ([]byte, error) {
	f := file{
		Name:        m.Name,
		Version:     m.Version,
		Description: m.Description,
		Doc:         m.Doc,
		Run:         fileRun{Command: m.Run.Command},
	}
	if m.Schema.Path != "" {
		f.Schema = m.Schema.Path
	} else {
		f.Schema = string(m.Schema.Inline)
	}
	if m.Build != nil {
		f.Build = &fileBuild{Command: m.Build.Command, Toolchains: m.Build.Toolchains}
	}
	p := m.Permissions
	tasks := int64(p.Tasks)
	f.Permissions = filePerms{
		Workspace:   p.Workspace.String(),
		ReadOnly:    p.ReadOnly,
		Egress:      p.Egress,
		Credentials: p.Credentials,
		Host:        p.Host,
		Memory:      int64(p.Memory),
		Tasks:       &tasks,
		Timeout:     p.Timeout.String(),
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(f); err != nil {
		return nil, fmt.Errorf("encoding %s: %w", FileName, err)
	}
	return buf.Bytes(), nil
}
