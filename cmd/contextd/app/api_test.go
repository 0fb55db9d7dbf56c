package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/internal/daemontest"
)

// contextd api prints the answer's body and exits as the problem's code
// says, against a real daemon's HTTP API.
func TestAPICommand(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("XDG_DATA_HOME", filepath.Join(state, "data"))
	_, sock := daemontest.StartHTTP(t)
	ws := t.TempDir()
	os.Mkdir(filepath.Join(ws, ".git"), 0o700)
	body := filepath.Join(t.TempDir(), "call.json")
	os.WriteFile(body, []byte(`{"tool":"safe_bash","input":{"command":"echo from-api"},"workspace":"`+ws+`"}`), 0o600)
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"api", "/v1/status"}, 0, `"pid"`},
		{[]string{"api", "v1/tools"}, 0, `"safe_bash"`},
		{[]string{"api", "-d", "@" + body, "/v1/calls"}, 0, "from-api"},
		{[]string{"api", "-d", `{"tool":"nope","input":{},"workspace":"/"}`, "/v1/calls"}, catalog.ErrUnknownTool.Exit, catalog.ErrUnknownTool.Code},
		{[]string{"api", "-X", "DELETE", "/v1/calls"}, catalog.ErrUnknownEndpoint.Exit, catalog.ErrUnknownEndpoint.Code},
		{[]string{"api", "/v1/calls/00000000-0000-4000-8000-000000000000"}, catalog.ErrNoCall.Exit, catalog.ErrNoCall.Code},
	} {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), append(tc.args, "--socket", sock), &out, &errOut)
		if code != tc.code || !strings.Contains(out.String(), tc.contains) {
			t.Errorf("%v: exit %d, want %d; stdout %.300s; stderr %s", tc.args, code, tc.code, out.String(), errOut.String())
		}
	}
	if code := Run(context.Background(), []string{"api", "/v1/status", "--socket", filepath.Join(t.TempDir(), "none")}, &bytes.Buffer{}, &bytes.Buffer{}); code != catalog.ExitUnavailable {
		t.Errorf("no daemon: exit %d", code)
	}
}
