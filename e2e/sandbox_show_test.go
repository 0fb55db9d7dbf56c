//go:build e2e

package e2e

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// showView is runner.View as `contextd sandbox show --json` and the
// sandbox's debug log ("sandbox view") print it.
type showView struct {
	Workspace string   `json:"workspace"`
	Home      string   `json:"home"`
	ReadOnly  []string `json:"read_only"`
	ReadWrite []string `json:"read_write"`
	Pins      []string `json:"pins"`
	HomeDir   string   `json:"home_dir"`
	Binds     []struct {
		Source, Target string
	} `json:"binds"`
	Overlays []struct {
		Lower, Upper, Work string
	} `json:"overlays"`
	Masks   []string `json:"masks"`
	Network bool     `json:"host_network"`
	Listen  []string `json:"listen"`
	Limits  struct {
		MemoryMax, TasksMax uint64
		CPUQuotaPercent     int
	} `json:"limits"`
}

// plannedCopy is homemount.PlannedCopy: a plan's source of a scrubbed copy,
// which a call writes afresh, under $XDG_RUNTIME_DIR/contextd/views.
const plannedCopy = "(a scrubbed copy, made for each call)"

// TestSandboxShowIsWhatACallGets: `contextd sandbox show` prints the view a
// safe_bash call in the same workspace really runs with, mount for mount,
// in order: the shield (git's entries, a missing agent configuration's
// placeholder, an existing nested one), the home view (the scratch home,
// presets, a scrubbed copy, cache overlays, masks), the egress proxy's
// listeners and trust bundles, the limits. The call's view is the one the
// sandbox logged on receiving it, not one worked out again.
func TestSandboxShowIsWhatACallGets(t *testing.T) {
	cleanup := func() {
		mustCode(t, userSh(t, `cd ~/proj && rm -rf sub-show .vscode
if [ -e ~/.gitconfig.orig-show ]; then mv ~/.gitconfig.orig-show ~/.gitconfig
elif [ -e ~/.gitconfig.show-made ]; then rm -f ~/.gitconfig ~/.gitconfig.show-made; fi`), 0)
	}
	cleanup()
	t.Cleanup(cleanup)
	// A nested agent configuration that exists, .vscode missing (a
	// placeholder), a ~/.gitconfig with a token (a scrubbed copy).
	mustCode(t, userSh(t, `cd ~/proj && mkdir -p sub-show/.claude && echo '{}' > sub-show/.claude/settings.json &&
if [ -e ~/.gitconfig ]; then cp -p ~/.gitconfig ~/.gitconfig.orig-show; else touch ~/.gitconfig.show-made; fi
printf '[user]\n\tname = T\n[http]\n\textraHeader = Authorization: Bearer ghp_Zq8mR2vL5xK9tW3nB7cY1dF6hJ4pS0aE2gUi\n' > ~/.gitconfig`), 0)

	r := runAs(t, "", nil, "", filepath.Join(env.bin, "contextd"), "sandbox", "show", "--json")
	mustCode(t, r, 0)
	var rep struct {
		View showView `json:"view"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("sandbox show --json: %v\n%s", err, r.stdout)
	}
	shown := rep.View

	before := len(daemonLog(t))
	mustCode(t, tool(t, "safe_bash", "", "true"), 0)
	var got *showView
	line := regexp.MustCompile(`msg="sandbox view" tool=safe_bash view=("(?:[^"\\]|\\.)*")`)
	waitFor(t, 10*time.Second, "the call's sandbox view in the daemon's log", func() bool {
		log := daemonLog(t)
		if len(log) < before {
			before = 0 // a new daemon, a new file
		}
		m := line.FindAllStringSubmatch(log[before:], -1)
		if len(m) == 0 {
			return false
		}
		s, err := strconv.Unquote(m[len(m)-1][1])
		if err != nil {
			t.Fatalf("the logged view: %v", err)
		}
		got = &showView{}
		if err := json.Unmarshal([]byte(s), got); err != nil {
			t.Fatalf("the logged view: %v\n%s", err, s)
		}
		return true
	})
	copies := 0
	for i, b := range got.Binds {
		if strings.Contains(b.Source, "/contextd/views/call-") {
			got.Binds[i].Source = plannedCopy
			copies++
		}
	}
	if copies == 0 {
		t.Errorf("the call had no scrubbed copy (~/.gitconfig holds a token): %+v", got.Binds)
	}
	normalize(&shown)
	normalize(got)
	if !reflect.DeepEqual(shown, *got) {
		a, _ := json.MarshalIndent(shown, "", "  ")
		b, _ := json.MarshalIndent(got, "", "  ")
		t.Fatalf("sandbox show is not what the call got:\nshown: %s\ncall:  %s", a, b)
	}
	// The view is the one this test set up, not two empty ones alike.
	mustContain(t, "the shown view", strings.Join(shown.ReadOnly, "\n"),
		filepath.Join(env.project, ".vscode"), filepath.Join(env.project, "sub-show/.claude"))
	mustContain(t, "the shown view's bound-onto-itself directories", strings.Join(shown.ReadWrite, "\n"),
		filepath.Join(env.project, "sub-show"))
	if shown.HomeDir == "" || len(shown.Listen) == 0 {
		t.Errorf("a view without a scratch home or the proxy's listeners: %+v", shown)
	}
}

// normalize makes nil and empty lists alike: JSON prints one as null and
// the other as [], and neither mounts anything.
func normalize(v *showView) {
	for _, l := range []*[]string{&v.ReadOnly, &v.ReadWrite, &v.Pins, &v.Masks, &v.Listen} {
		if *l == nil {
			*l = []string{}
		}
	}
}
