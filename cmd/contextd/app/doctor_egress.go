package app

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/egress"
	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/sandbox"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/scrub"
)

// doctorAnswer is what the doctor's own server on the host's loopback
// answers; seeing it inside proves the whole path.
const doctorAnswer = "contextd-doctor-egress-ok"

// egressCheck runs the egress proxy end to end: a sandbox under safe_bash's
// profile asks the proxy for a server the doctor started on the host's
// loopback (allowed by a rule of the check's own), for a host no rule
// allows (refused with 403), and looks a name up (no resolver inside).
func egressCheck(ctx context.Context, cfg *config.Config, cfgErr error) sandbox.Check {
	ch := sandbox.Check{Layer: "egress proxy (the only way out of a sandbox)"}
	if cfgErr != nil {
		ch.Detail, ch.Fix = cfgErr.Error(), "fix the configuration first"
		return ch
	}
	fail := func(detail, fix string) sandbox.Check {
		ch.Detail, ch.Fix = detail, fix
		return ch
	}
	setup, err := sandboxenv.NewNet(cfg, nil)
	if err != nil {
		return fail(err.Error(), "without it sandboxed commands have no network at all; fix what the message names (set HOME)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail("listen on the host's loopback: "+err.Error(), "the check needs a loopback port")
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(doctorAnswer)) }),
		ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	rule, _ := egress.ParseRule("127.0.0.1:"+strconv.Itoa(port), "contextd doctor")
	n, err := setup.Prepare(netview.Call{Tool: "doctor", Vault: scrub.NewVault(), Extra: []egress.Rule{rule}})
	if err != nil {
		return fail(err.Error(), "fix what the message names")
	}
	ws, err := os.MkdirTemp("", "contextd-doctor-")
	if err != nil {
		return fail(err.Error(), "make sure $TMPDIR (or /tmp) is writable")
	}
	defer os.RemoveAll(ws)
	// bash's /dev/tcp is enough to speak to the proxy: no client needed.
	script := fmt.Sprintf(`ask() { exec 3<>/dev/tcp/127.0.0.1/3128 || return; printf "$1" >&3; IFS= read -r -t 10 line <&3; echo "$line"; while IFS= read -r -t 10 l <&3 || [ -n "$l" ]; do case "$l" in *%[2]s*) echo "$l";; esac; l=; done; exec 3<&-; }
ask 'GET http://127.0.0.1:%[1]d/ HTTP/1.1\r\nHost: 127.0.0.1:%[1]d\r\nConnection: close\r\n\r\n'
ask 'CONNECT doctor.invalid:443 HTTP/1.1\r\nHost: doctor.invalid:443\r\n\r\n'
if getent hosts registry.npmjs.org >/dev/null 2>&1; then echo resolver-reached; else echo no-resolver; fi
`, port, doctorAnswer)
	home, _ := os.UserHomeDir()
	var out bytes.Buffer
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r := &sandbox.Runner{ScopeNote: "not needed for this check"}
	ex, err := r.Run(cctx, runner.Spec{Tool: "safe_bash", Mode: runner.Exec, Path: "/bin/bash", Args: []string{"bash", "-c", script},
		Dir: ws, Workspace: ws, Home: home, Env: netview.MergeEnv([]string{"PATH=/usr/bin:/bin"}, n.Env),
		Binds: n.Binds, Listen: n.Listen, Serve: n.Serve, Output: &out, Timeout: 25 * time.Second})
	sum := n.Finish()
	if err != nil {
		return fail("the sandbox did not start: "+err.Error(), "see the complete-sandbox check above")
	}
	got := out.String()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	switch {
	case ex.Code != 0 || len(lines) < 3:
		return fail(fmt.Sprintf("the probe exited %d: %q", ex.Code, got), "report this: the proxy did not answer as expected")
	case !strings.Contains(lines[0], " 200 ") || !strings.Contains(got, doctorAnswer):
		return fail("a request to an allowed host failed: "+strings.TrimSpace(lines[0]), "report this: the proxy could not reach an allowed host")
	case !strings.Contains(got, "HTTP/1.1 403"):
		return fail("a host no rule allows was not refused: "+got, "report this: the proxy must refuse what no rule allows")
	case !strings.Contains(got, "no-resolver"):
		return fail("a name lookup inside the sandbox succeeded", "report this: the sandbox must have no resolver")
	}
	refused := 0
	for _, c := range sum.Connections {
		if !c.Allowed {
			refused++
		}
	}
	ch.OK = true
	ch.Detail = fmt.Sprintf("allowed host reached, unlisted host refused (%d refusal recorded), no resolver inside; %d rule(s) in force for safe_bash (contextd sandbox show lists them)",
		refused, len(n.Rules)-1)
	return ch
}
