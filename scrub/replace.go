package scrub

// Replace returns a copy of b with each finding's span replaced by name(f). fs must be
// sorted and not overlap, as Find returns them. A nil name numbers the findings in order:
// [REDACTED:<rule>:1], [REDACTED:<rule>:2], ... (use Vault.Placeholder to keep numbers
// stable across calls and to restore secrets later).
func Replace(b []byte, fs []Finding, name func(Finding) string) []byte {
	if name == nil {
		n := 0
		name = func(f Finding) string {
			n++
			return formatPlaceholder(f.Rule, n)
		}
	}
	out := make([]byte, 0, len(b))
	prev := 0
	for _, f := range fs {
		if f.Start < prev || f.End > len(b) || f.Start > f.End {
			// Not what Find returns; skipping keeps the output well-formed.
			continue
		}
		out = append(out, b[prev:f.Start]...)
		out = append(out, name(f)...)
		prev = f.End
	}
	return append(out, b[prev:]...)
}
