//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// `contextd inspect` in a real terminal: tmux, 80x24, as the test user, driven
// with send-keys and read with capture-pane, attached to a live wrap session
// of server-everything that wrapclient.mjs drives.

// inspTmux runs tmux as the test user on the test's own server socket.
func inspTmux(t *testing.T, args ...string) result {
	t.Helper()
	return runAs(t, "", nil, "", append([]string{"tmux", "-L", "ctxd-e2e-inspect"}, args...)...)
}

// inspScreen is what the pane shows now.
func inspScreen(t *testing.T, pane string) string {
	t.Helper()
	r := inspTmux(t, "capture-pane", "-p", "-t", pane)
	if r.code != 0 {
		t.Fatalf("capture-pane: %s", r)
	}
	return r.stdout
}

// inspWait polls the pane until cond holds, and fails with the last screen.
func inspWait(t *testing.T, pane, what string, cond func(screen string) bool) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := inspScreen(t, pane)
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; the screen:\n%s", what, s)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// inspRowRE matches a message row of the list: the selection mark, the held
// mark, the sequence number and the direction.
var inspRowRE = regexp.MustCompile(`^([> =])([! ]) +([0-9]+) (->|<-) `)

// inspHeld waits until the message the test is about is held, and is the
// only held message: a row marked held that contains every string of want,
// with the header counting one held. A real server sends requests and
// notifications of its own at moments the test does not choose
// (server-everything asks for roots/list 350 ms after initialization, then
// logs "Roots updated"); with intercept on they are held too. Like a user,
// the test forwards such messages as they are: n selects the next held
// message, f forwards it.
func inspHeld(t *testing.T, pane, what string, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := inspScreen(t, pane)
		target, others := false, 0
		var selected string
		for _, l := range strings.Split(s, "\n") {
			m := inspRowRE.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			if m[1] == ">" {
				selected = l
			}
			if m[2] != "!" {
				continue
			}
			if inspHas(want...)(l) {
				target = true
			} else {
				others++
			}
		}
		switch {
		case target && others == 0 && strings.Contains(s, ", 1 HELD |"):
			return s
		case others > 0 && selected != "" && selected[1] == '!' && !inspHas(want...)(selected):
			// The selection is on another held message: forward it.
			inspKeys(t, pane, "f")
		case others > 0 || !target && strings.Contains(s, " HELD |"):
			// Another held message, or a held one the list does not show
			// (the list stops following the newest once the user selects
			// an older message): n selects the next held message.
			inspKeys(t, pane, "n")
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s to be the one held message; the screen:\n%s", what, s)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// inspForwardUntil forwards every held message, as a user who lets them
// through would, until done holds.
func inspForwardUntil(t *testing.T, pane, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !done() {
		s := inspScreen(t, pane)
		if strings.Contains(s, " HELD |") {
			if sel := inspSelectedRow(s); len(sel) > 1 && sel[1] == '!' {
				inspKeys(t, pane, "f")
			} else {
				inspKeys(t, pane, "n")
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out forwarding held messages until %s finished; the screen:\n%s", what, s)
		}
		time.Sleep(150 * time.Millisecond)
	}
	// G: back to the newest message, which the list follows again.
	inspKeys(t, pane, "G")
}

// inspSelectedRow is the list row the selection is on, or "".
func inspSelectedRow(screen string) string {
	for _, l := range strings.Split(screen, "\n") {
		if m := inspRowRE.FindStringSubmatch(l); m != nil && m[1] == ">" {
			return l
		}
	}
	return ""
}

// inspSelectHeld selects the one held message (n) and waits for the detail
// pane to show it.
func inspSelectHeld(t *testing.T, pane, what string, detail ...string) string {
	t.Helper()
	inspKeys(t, pane, "n")
	return inspWait(t, pane, what+", selected", inspHas(append([]string{", 1 HELD |"}, detail...)...))
}

func inspHas(subs ...string) func(string) bool {
	return func(s string) bool {
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				return false
			}
		}
		return true
	}
}

func inspKeys(t *testing.T, pane string, keys ...string) {
	t.Helper()
	if r := inspTmux(t, append([]string{"send-keys", "-t", pane}, keys...)...); r.code != 0 {
		t.Fatalf("send-keys %v: %s", keys, r)
	}
}

// inspStart opens a detached 80x24 tmux session running command, which is
// followed by a line with its exit status; the pane stays for capture.
func inspStart(t *testing.T, name string, vars []string, command string) {
	t.Helper()
	args := []string{"new-session", "-d", "-s", name, "-x", "80", "-y", "24"}
	for _, v := range vars {
		args = append(args, "-e", v)
	}
	args = append(args, "sh -c '"+command+"; echo \"inspect exited $?\"; sleep 600'")
	if r := inspTmux(t, args...); r.code != 0 {
		t.Fatalf("tmux new-session: %s", r)
	}
}

// inspAnswer waits for the answer to a call the UI decides on, and fails
// with the screen when none comes.
func inspAnswer(t *testing.T, w *wrapSession, pane, what string, ch <-chan wrapAnswer) wrapAnswer {
	t.Helper()
	select {
	case a, ok := <-ch:
		if !ok {
			t.Fatalf("%s: wrapclient.mjs ended; stderr:\n%s", what, w.stderr.String())
		}
		return a
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer in 30 s; the screen:\n%s", what, inspScreen(t, pane))
	}
	panic("unreachable")
}

// TestInspectTmux: attach, enable intercept, see a call held, edit it in
// $EDITOR, and the server receives the edited call; forward another one as
// it is; save the session; quit.
func TestInspectTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is missing: run scripts/deps.sh")
	}
	t.Cleanup(func() { inspTmux(t, "kill-server") })
	inspect := filepath.Join(env.bin, "contextd") + " inspect"

	// Without a live wrap session, inspect says so and exits.
	inspStart(t, "none", nil, inspect)
	s := inspWait(t, "none", "inspect to refuse", inspHas("inspect exited"))
	if !strings.Contains(s, "CTXD-E") || !strings.Contains(s, "wrap session") || strings.Contains(s, "inspect exited 0") {
		t.Fatalf("inspect without a live wrap session:\n%s", s)
	}

	w := startWrap(t, "everything-inspect", nil, "node", everythingEntry(t), "stdio")
	w.do(map[string]any{"op": "list"})
	// server-everything asks the client for its roots 350 ms after
	// initialization, and logs the answer: let that exchange finish before
	// intercept is on, so that what is held next is the test's own call.
	// (inspHeld forwards such messages should a server send more later.)
	w.settled(t, "roots/list", "notifications/message")

	editor := ".inspect-editor.sh"
	writeProjectFile(t, editor, "#!/bin/sh\n# the test's $EDITOR: changes the argument of the held call\nexec sed -i 's/words from the agent/words from the inspector/' \"$1\"\n")
	if err := os.Chmod(filepath.Join(env.project, editor), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(filepath.Join(env.project, editor)) })
	saved, _ := filepath.Glob(filepath.Join(env.project, "contextd-inspect-*.json"))
	for _, f := range saved {
		os.Remove(f)
	}

	inspStart(t, "tui", []string{"EDITOR=" + filepath.Join(env.project, editor)}, inspect)
	s = inspWait(t, "tui", "the attached UI with the backlog", inspHas("contextd inspect | intercept off", "tools/list", "everything-inspect"))
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) != 24 {
		t.Errorf("the UI drew %d lines in a 24-line pane:\n%s", len(lines), s)
	}
	for i, l := range lines {
		if len([]rune(l)) > 80 {
			t.Errorf("line %d is wider than 80 columns: %q", i+1, l)
		}
	}

	inspKeys(t, "tui", "i")
	inspWait(t, "tui", "intercept on", inspHas("intercept ON"))

	// The server asks for roots again when the client says they changed:
	// with intercept on, the notification, the server's roots/list, the
	// client's answer and the server's log of it are each held in turn, at
	// moments the server chooses. The user forwards them as they come.
	w.do(map[string]any{"op": "roots-changed"})
	inspForwardUntil(t, "tui", "the roots exchange", func() bool {
		st := w.do(map[string]any{"op": "stats"}).Stats
		return st != nil && st.Requests["roots/list"] >= 2 && st.Notifications["notifications/message"] >= 2
	})

	// The agent calls; the call is held until the user decides.
	answer := w.send(map[string]any{"op": "call", "name": "echo", "arguments": map[string]any{"message": "words from the agent"}})
	s = inspHeld(t, "tui", "the call", "-> req", "tools/call echo")
	var heldRow string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "tools/call echo") && strings.Contains(l, "HELD") {
			heldRow = l
		}
	}
	if len(heldRow) < 2 || heldRow[1] != '!' {
		t.Errorf("the held call's row is not marked held (!): %q\n%s", heldRow, s)
	}
	inspSelectHeld(t, "tui", "the held call", "client->server request HELD", "words from the agent")
	select {
	case a := <-answer:
		t.Fatalf("the held call was answered before anyone decided: %+v", a)
	case <-time.After(time.Second):
	}

	// m: the editor changes the argument, and the call goes on as edited.
	// The server's answer is held in turn (intercept holds both directions)
	// and shows what the server received; f lets it through.
	inspKeys(t, "tui", "m")
	inspHeld(t, "tui", "the answer to the edited call", "<- resp")
	inspSelectHeld(t, "tui", "the answer to the edited call", "server->client response HELD", "Echo: words from the inspector")
	inspKeys(t, "tui", "f")
	a := inspAnswer(t, w, "tui", "the edited call", answer)
	r := w.resultOK("echo", a)
	if got := strings.TrimSpace(r.Text()); got != "Echo: words from the inspector" {
		t.Fatalf("the server received something else than the edited call: %q", got)
	}
	inspWait(t, "tui", "the edited call as modified", func(s string) bool {
		return !strings.Contains(s, "HELD") && strings.Contains(s, " mod ")
	})

	// f, twice: the call and its answer go through as they are.
	answer = w.send(map[string]any{"op": "call", "name": "echo", "arguments": map[string]any{"message": "second call"}})
	inspHeld(t, "tui", "the second call", "-> req", "tools/call echo")
	inspSelectHeld(t, "tui", "the second call", "client->server request HELD", "second call")
	inspKeys(t, "tui", "f")
	inspHeld(t, "tui", "the answer to the second call", "<- resp")
	inspSelectHeld(t, "tui", "the answer to the second call", "server->client response HELD", "Echo: second call")
	inspKeys(t, "tui", "f")
	r = w.resultOK("echo", inspAnswer(t, w, "tui", "the forwarded call", answer))
	if got := strings.TrimSpace(r.Text()); got != "Echo: second call" {
		t.Fatalf("the forwarded call: %q", got)
	}

	// s: the session as received, backlog included, in a file in the cwd.
	inspKeys(t, "tui", "s")
	inspWait(t, "tui", "the save", inspHas("saved the session to"))
	saved, _ = filepath.Glob(filepath.Join(env.project, "contextd-inspect-*.json"))
	if len(saved) != 1 {
		t.Fatalf("saved files: %v", saved)
	}
	t.Cleanup(func() { os.Remove(saved[0]) })
	b, err := os.ReadFile(saved[0])
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Record   string `json:"record"`
		Server   string `json:"server"`
		Messages []struct {
			Seq      uint64          `json:"seq"`
			Method   string          `json:"method"`
			Tool     string          `json:"tool"`
			Raw      json.RawMessage `json:"raw"`
			Original json.RawMessage `json:"original"`
			Action   string          `json:"action"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatalf("the saved session is not JSON: %v\n%.2000s", err, b)
	}
	if file.Server != "everything-inspect" || len(file.Messages) == 0 || file.Messages[0].Seq != 1 || file.Messages[0].Method != "initialize" {
		t.Fatalf("the saved session does not start with the backlog: %.2000s", b)
	}
	modified := false
	for _, m := range file.Messages {
		if m.Tool == "echo" && m.Action == "modify" && strings.Contains(string(m.Raw), "words from the inspector") && strings.Contains(string(m.Original), "words from the agent") {
			modified = true
		}
	}
	if !modified {
		t.Errorf("the saved session lacks the modified call with its original:\n%s", b)
	}

	// Intercept off, then q quits at once.
	inspKeys(t, "tui", "i")
	inspWait(t, "tui", "intercept off", inspHas("intercept off"))
	inspKeys(t, "tui", "q")
	inspWait(t, "tui", "inspect to exit", inspHas("inspect exited 0"))

	w.close()
	id := endedSession(t, "everything-inspect", everythingEntry(t))
	rec := exportRecord(t, id)
	checkRecord(t, rec)
	found := false
	for _, e := range rec.Entries {
		if e.Tool == "echo" && e.Dir == "client->server" && e.Action == "modify" && e.Raw != nil && e.Original != nil &&
			strings.Contains(*e.Raw, "words from the inspector") && strings.Contains(*e.Original, "words from the agent") {
			found = true
		}
	}
	if !found {
		t.Errorf("the record of %s does not hold the call as modified in the inspector, with its original", id)
	}
	if file.Record != id {
		t.Errorf("the saved session names record %q, the session list %q", file.Record, id)
	}
}
