package pluginsdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/protobuf/proto"

	"github.com/contextd/contextd/wire/toolplugin"
)

// bins holds the plugins the tests build, once per run of the test binary.
var bins string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pluginsdk-test")
	if err != nil {
		panic(err)
	}
	bins = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// built maps a package to the build of its binary.
var built sync.Map

// binary builds each plugin once per test binary run.
func binary(t *testing.T, pkg string) string {
	t.Helper()
	f, _ := built.LoadOrStore(pkg, sync.OnceValues(func() (string, error) {
		bin := filepath.Join(bins, filepath.Base(pkg))
		out, err := exec.Command("go", "build", "-o", bin, "github.com/contextd/contextd/"+pkg).CombinedOutput()
		if err != nil {
			return "", errors.New(string(out))
		}
		return bin, nil
	}))
	bin, err := f.(func() (string, error))()
	if err != nil {
		t.Fatalf("go build %s: %v", pkg, err)
	}
	return bin
}

func start(t *testing.T, pkg string) *toolplugin.Client {
	t.Helper()
	c, err := toolplugin.Start(toolplugin.Config{Cmd: exec.Command(binary(t, pkg))})
	if err != nil {
		t.Fatalf("start %s: %v", pkg, err)
	}
	t.Cleanup(c.Kill)
	return c
}

// collect runs one call and returns its text and final frame.
func collect(ctx context.Context, c *toolplugin.Client, call toolplugin.Call) (string, *toolplugin.Final, error) {
	var text bytes.Buffer
	fin, err := c.Execute(ctx, call, func(p []byte) error { text.Write(p); return nil })
	return text.String(), fin, err
}

func TestExampleWordcount(t *testing.T) {
	c := start(t, "examples/tools/wordcount")
	text, fin, err := collect(t.Context(), c, toolplugin.Call{Input: []byte(`{"text":"one two\nthree\n\nfour five six"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if want := "1: 2 words\n2: 1 words\n3: 0 words\n4: 3 words\n"; text != want {
		t.Errorf("text = %q, want %q", text, want)
	}
	var data struct{ Lines, Words int }
	if err := json.Unmarshal(fin.GetDataJson(), &data); err != nil {
		t.Fatal(err)
	}
	if data.Lines != 4 || data.Words != 6 || fin.GetExitCode() != 0 || fin.GetError() != "" {
		t.Errorf("final = %v, data %+v", fin, data)
	}
	// A bad input is the tool's own failure, not the plugin's.
	_, fin, err = collect(t.Context(), c, toolplugin.Call{Input: []byte(`[`)})
	if err != nil || fin.GetExitCode() != 1 || !strings.HasPrefix(fin.GetError(), "input: ") {
		t.Errorf("bad input: final %v, err %v", fin, err)
	}
}

func TestHandshakeMismatchRefused(t *testing.T) {
	bin := binary(t, "examples/tools/wordcount")
	cookie := toolplugin.Handshake
	cookie.MagicCookieValue = "not contextd's"
	version := toolplugin.Handshake
	version.ProtocolVersion = toolplugin.ProtocolVersion + 1
	for _, tc := range []struct {
		name string
		hs   *plugin.HandshakeConfig
		want string
	}{
		{"cookie", &cookie, "Unrecognized remote plugin message"},
		{"version", &version, "incompatible API version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := toolplugin.Start(toolplugin.Config{Cmd: exec.Command(bin), Handshake: tc.hs})
			if err == nil {
				c.Kill()
				t.Fatal("started")
			}
			if !errors.Is(err, toolplugin.ErrStart) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrStart naming %q", err, tc.want)
			}
		})
	}
}

func TestCancelCrossesAndKillEndsProcess(t *testing.T) {
	c := start(t, "pluginsdk/internal/probetool")
	pid := c.Pid()
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := c.Execute(ctx, toolplugin.Call{Input: []byte(`{"do":"block"}`)}, func([]byte) error {
			close(started)
			return nil
		})
		done <- err
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled call did not return")
	}
	// The plugin's context ended too: a later call sees it.
	wait, stop := context.WithTimeout(t.Context(), 10*time.Second)
	defer stop()
	_, fin, err := collect(wait, c, toolplugin.Call{Input: []byte(`{"do":"sawcancel"}`)})
	if err != nil || string(fin.GetDataJson()) != `"saw cancel"` {
		t.Errorf("the plugin did not see the cancel: final %v, err %v", fin, err)
	}
	c.Kill()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("plugin pid %d after Kill: %v, want ESRCH", pid, err)
	}
}

func TestDeadlineCrosses(t *testing.T) {
	c := start(t, "pluginsdk/internal/probetool")
	deadline := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	_, fin, err := collect(ctx, c, toolplugin.Call{Input: []byte(`{"do":"deadline"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Set      bool
		UnixNano int64 `json:"unix_nano"`
	}
	if err := json.Unmarshal(fin.GetDataJson(), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Set || got.UnixNano > deadline.UnixNano() || got.UnixNano < deadline.Add(-time.Second).UnixNano() {
		t.Errorf("plugin's deadline = %+v, want %v", got, deadline)
	}
}

func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		do      string
		wantErr error
		want    string
		// text is what the call streamed before it failed; a process that
		// exits may not have flushed it.
		text string
	}{
		{"panic", toolplugin.ErrFailed, "tool panicked: probe panics", "about to panic\n"},
		{"exit", toolplugin.ErrExited, "", ""},
	} {
		t.Run(tc.do, func(t *testing.T) {
			c := start(t, "pluginsdk/internal/probetool")
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			text, _, err := collect(ctx, c, toolplugin.Call{Input: []byte(`{"do":"` + tc.do + `"}`)})
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %v naming %q", err, tc.wantErr, tc.want)
			}
			if ctx.Err() != nil {
				t.Fatal("the call ended only at the test's timeout")
			}
			if tc.text != "" && text != tc.text {
				t.Errorf("text before the failure = %q", text)
			}
			if tc.do == "panic" {
				// A panic fails its call only: the plugin keeps serving.
				if _, _, err := collect(ctx, c, toolplugin.Call{Input: []byte(`{"do":"deadline"}`)}); err != nil {
					t.Errorf("call after the panic: %v", err)
				}
			}
		})
	}
	// A tool's own error is a result, with the tool's exit code.
	c := start(t, "pluginsdk/internal/probetool")
	_, fin, err := collect(t.Context(), c, toolplugin.Call{Input: []byte(`{"do":"fail"}`)})
	if err != nil || fin.GetError() != "probe failed" || fin.GetExitCode() != 7 {
		t.Errorf("fail: final %v, err %v", fin, err)
	}
}

// fakeHost answers every ToolHost request from what the call would act on.
type fakeHost struct {
	toolplugin.UnimplementedToolHostServer
	mu   sync.Mutex
	logs []string
}

func (h *fakeHost) Scrub(_ context.Context, r *toolplugin.ScrubRequest) (*toolplugin.ScrubReply, error) {
	return &toolplugin.ScrubReply{Text: bytes.ReplaceAll(r.GetText(), []byte("hunter2"), []byte("[REDACTED]"))}, nil
}

func (h *fakeHost) Log(_ context.Context, r *toolplugin.LogRequest) (*toolplugin.LogReply, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, r.GetLevel()+" "+r.GetMessage()+" k="+r.GetAttrs()["k"])
	return &toolplugin.LogReply{}, nil
}

func (h *fakeHost) MemoryStore(_ context.Context, r *toolplugin.MemoryStoreRequest) (*toolplugin.MemoryStoreReply, error) {
	return &toolplugin.MemoryStoreReply{Id: "mem-" + r.GetTags()[0]}, nil
}

func (h *fakeHost) MemorySearch(_ context.Context, r *toolplugin.MemorySearchRequest) (*toolplugin.MemorySearchReply, error) {
	ms := make([]*toolplugin.Memory, r.GetLimit())
	for i := range ms {
		ms[i] = &toolplugin.Memory{Id: "m"}
	}
	return &toolplugin.MemorySearchReply{Memories: ms}, nil
}

func (h *fakeHost) CheckpointSave(_ context.Context, r *toolplugin.CheckpointSaveRequest) (*toolplugin.CheckpointSaveReply, error) {
	return &toolplugin.CheckpointSaveReply{Id: "cp-" + r.GetName()}, nil
}

func (h *fakeHost) CheckpointRestore(_ context.Context, r *toolplugin.CheckpointRestoreRequest) (*toolplugin.CheckpointRestoreReply, error) {
	return &toolplugin.CheckpointRestoreReply{StateJson: []byte(r.GetId() + "/" + r.GetLevel())}, nil
}

func TestHostOverBroker(t *testing.T) {
	c := start(t, "pluginsdk/internal/probetool")
	h := &fakeHost{}
	call := toolplugin.Call{Input: []byte(`{"do":"host","text":"pw hunter2"}`), Session: "s1", Workspace: "/w", Host: h}
	_, fin, err := collect(t.Context(), c, call)
	if err != nil || fin.GetError() != "" {
		t.Fatalf("final %v, err %v", fin, err)
	}
	var got map[string]any
	if err := json.Unmarshal(fin.GetDataJson(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"session": "s1", "workspace": "/w", "scrubbed": "pw [REDACTED]", "memory": "mem-t",
		"found": 3.0, "checkpoint": "cp-n", "restored": "cp-n/full"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if !proto.Equal(fin, &toolplugin.Final{DataJson: fin.GetDataJson(), Refs: []string{"mem-t"}}) {
		t.Errorf("final = %v", fin)
	}
	if len(h.logs) != 1 || h.logs[0] != "info probe logs k=v" {
		t.Errorf("logs = %q", h.logs)
	}
	// Without a host, the plugin's requests are refused, naming the call.
	call.Host = nil
	_, fin, err = collect(t.Context(), c, call)
	if err != nil || !strings.Contains(fin.GetError(), "no such call running") {
		t.Errorf("no host: final %v, err %v", fin, err)
	}
}

// The SDK's writer scrubs before a frame leaves the plugin: the daemon's
// scrub is the second layer, not the only one.
func TestOutputScrubbedInside(t *testing.T) {
	c := start(t, "examples/tools/smoke")
	const key = "AKIAQYLPMN5HHHFPZAM2"
	text, fin, err := collect(t.Context(), c, toolplugin.Call{Input: []byte(`{"text":"aws_access_key_id = ` + key + `","lines":3}`)})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, key) || !strings.Contains(text, "[REDACTED:") {
		t.Errorf("the plugin's frames carry the key: %q", text)
	}
	if !strings.Contains(text, "line 3 of 3") || fin.GetExitCode() != 0 {
		t.Errorf("the rest of the output: %q, final %v", text, fin)
	}
}
