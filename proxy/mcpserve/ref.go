package mcpserve

import (
	"fmt"
	"strings"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/toolspec"
)

// The daemon pages a cut result by reference, and charges each page to the
// budget of the tool that made it. Over MCP the pages come through one tool,
// continue, so the reference handed to the model names that tool too:
// "<tool>:<daemon reference>". Nothing is remembered in this process, so a
// reference stays good for as long as the daemon keeps its pages, also from a
// new connection that shares the session (CONTEXTD_SESSION).

// maxRef bounds a reference from the model; the daemon's are under 60 bytes.
const maxRef = 256

// builtinTool says whether tool is one of contextd's own.
func builtinTool(tool string) bool {
	_, ok := toolspec.Get(tool)
	return ok
}

// formatRef is the reference to give the model for the daemon's ref.
func formatRef(tool, ref string) string { return tool + ":" + ref }

// parseRef splits a reference the model passed back. It checks only what this
// side needs (a tool known says is served, and a non-empty rest without spaces); the
// daemon checks the rest and answers CTXD-E040 for a reference it does not know.
func parseRef(s string, known func(string) bool) (tool, ref string, err error) {
	bad := func(why string) (string, string, error) {
		if len(s) > 80 {
			s = s[:80] + "…"
		}
		return "", "", fmt.Errorf("continue: reference %q %s; pass the ref from the last line of a cut result: %w", s, why, catalog.ErrUnknownContinuation)
	}
	if len(s) > maxRef {
		return bad("is too long")
	}
	tool, ref, ok := strings.Cut(s, ":")
	if !ok || ref == "" {
		return bad("is not of the form tool:ref")
	}
	if !known(tool) {
		return bad("names no tool")
	}
	if strings.ContainsFunc(ref, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return bad("holds spaces or control characters")
	}
	return tool, ref, nil
}
