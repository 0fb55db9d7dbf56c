package scrub

import "sync"

// Vault remembers, for one session and in memory only, which secret each placeholder
// stands for and where the secret was read, so that text the agent writes back with
// placeholders can get its real secrets again. It is safe for concurrent use.
type Vault struct {
	mu       sync.Mutex
	n        int
	bySecret map[string]string // secret -> placeholder
	entries  map[string]*vaultEntry
	// opened maps a path a file was read by to the identity of the file
	// that read opened (a source): a write by that path puts secrets back
	// only into that same file.
	opened map[string]string
}

type vaultEntry struct {
	secret  string
	sources map[string]bool
}

// NewVault returns an empty vault.
func NewVault() *Vault {
	return &Vault{bySecret: map[string]string{}, entries: map[string]*vaultEntry{}, opened: map[string]string{}}
}

// Placeholder returns the placeholder for secret, "[REDACTED:<rule>:<n>]", numbering new
// secrets 1, 2, 3... in this vault. A secret seen before keeps its placeholder (and the
// rule it was first seen with). source is where the secret was read (a file path, or ""
// for command output); the vault remembers every source of each secret.
func (v *Vault) Placeholder(rule, secret, source string) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if ph, ok := v.bySecret[secret]; ok {
		v.entries[ph].sources[source] = true
		return ph
	}
	v.n++
	ph := formatPlaceholder(rule, v.n)
	v.bySecret[secret] = ph
	v.entries[ph] = &vaultEntry{secret: secret, sources: map[string]bool{source: true}}
	return ph
}

// Restore puts back the secrets of the placeholders in content that were read from source.
// Placeholders the vault does not know, or whose secret came from other sources only, are
// left as they are and listed (each once, in order) in unresolved: a secret read from one
// file is never written into another.
func (v *Vault) Restore(content []byte, source string) (out []byte, restored int, unresolved []string) {
	out, restored, _, unresolved = v.restore(content, source)
	return out, restored, unresolved
}

// RestoreFile is Restore for a write into the file whose identity is source
// (the source its read was tied to): "" puts nothing back, where Restore
// would put back what command output showed. It returns the placeholders
// put back, each once, to Bind to the file the write makes.
func (v *Vault) RestoreFile(content []byte, source string) (out []byte, put, unresolved []string) {
	if source == "" {
		return append([]byte(nil), content...), nil, placeholderList(content)
	}
	out, _, put, unresolved = v.restore(content, source)
	return out, put, unresolved
}

// placeholderList lists the placeholders in content, each once, in order.
func placeholderList(content []byte) []string {
	var list []string
	seen := map[string]bool{}
	for _, p := range placeholderSpans(content) {
		if ph := string(content[p.start:p.end]); !seen[ph] {
			seen[ph] = true
			list = append(list, ph)
		}
	}
	return list
}

func (v *Vault) restore(content []byte, source string) (out []byte, restored int, put, unresolved []string) {
	phs := placeholderSpans(content)
	if len(phs) == 0 {
		return append([]byte(nil), content...), 0, nil, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	seen := map[string]bool{}
	out = make([]byte, 0, len(content))
	prev := 0
	for _, p := range phs {
		ph := string(content[p.start:p.end])
		e, ok := v.entries[ph]
		first := !seen[ph]
		seen[ph] = true
		if !ok || !e.sources[source] {
			if first {
				unresolved = append(unresolved, ph)
			}
			continue
		}
		if first {
			put = append(put, ph)
		}
		out = append(out, content[prev:p.start]...)
		out = append(out, e.secret...)
		prev = p.end
		restored++
	}
	return append(out, content[prev:]...), restored, put, unresolved
}

// Bind adds source as a place each of placeholders' secrets was read from:
// a write made the file source with those secrets in it.
func (v *Vault) Bind(placeholders []string, source string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, ph := range placeholders {
		if e, ok := v.entries[ph]; ok {
			e.sources[source] = true
		}
	}
}

// Opened records that a read (or write) by path opened the file source.
func (v *Vault) Opened(path, source string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.opened[path] = source
}

// FileOf returns the source the last read or write by path opened, or "".
func (v *Vault) FileOf(path string) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.opened[path]
}

// Scrub finds the secrets in b and replaces them with this vault's placeholders,
// remembering source for each. It returns the scrubbed text and the findings (offsets
// in b).
func (v *Vault) Scrub(s *Scrubber, b []byte, source string) ([]byte, []Finding) {
	fs := s.Find(b)
	return Replace(b, fs, func(f Finding) string { return v.Placeholder(f.Rule, f.Secret, source) }), fs
}

// Len returns how many secrets the vault holds.
func (v *Vault) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.entries)
}
