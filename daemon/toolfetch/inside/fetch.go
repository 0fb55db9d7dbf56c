// Package inside is the fetch of a plugin tool's source in its sandbox: go-getter's git and HTTP getters with git hardened, then internal/safeunpack to unpack or copy what came into the staging tree.
package inside

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	getter "github.com/hashicorp/go-getter/v2"
	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/toolfetch/toolsrc"
	"github.com/contextd/contextd/internal/safeunpack"
)

// refusals are safeunpack's reasons to refuse a source.
var refusals = []error{safeunpack.ErrEscape, safeunpack.ErrLink, safeunpack.ErrSpecial, safeunpack.ErrTooLarge,
	safeunpack.ErrTooMany, safeunpack.ErrBadName, safeunpack.ErrDuplicate, safeunpack.ErrFormat}

// refused classes a safeunpack refusal as an install refusal (the source
// holds what contextd never installs); other errors pass unchanged.
func refused(err error) error {
	for _, r := range refusals {
		if errors.Is(err, r) {
			return fmt.Errorf("%w: %w", catalog.ErrInstallRefused, err)
		}
	}
	return err
}

// Result is what a fetch reports (toolsrc.Result).
type Result = toolsrc.Result

// Fetch fetches op's source into op.Dest.
func Fetch(ctx context.Context, op toolsrc.Op) (Result, error) {
	src, err := toolsrc.Parse(op.Source, "")
	if err != nil {
		return Result{}, err
	}
	if op.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, op.Timeout)
		defer cancel()
	}
	lim := safeunpack.Limits{MaxBytes: op.MaxBytes, MaxFiles: op.MaxFiles}
	var res Result
	var root string // a directory to copy from, when there is one
	switch src.Kind {
	case toolsrc.Git:
		root = filepath.Join(op.Work, "clone")
		if res.Resolved, err = cloneGit(ctx, src, root, op.Timeout); err != nil {
			return res, err
		}
	case toolsrc.HTTP:
		archive := filepath.Join(op.Work, "archive")
		if err := download(ctx, src, archive, op); err != nil {
			return res, err
		}
		if root, err = unpack(archive, src.Subdir, op, lim, &res); err != nil || root == "" {
			return res, err
		}
	case toolsrc.Local:
		st, err := os.Stat(src.URL)
		if err != nil {
			return res, fmt.Errorf("source %s: %v: %w", src.URL, err, catalog.ErrNotFound)
		}
		root = src.URL
		if st.Mode().IsRegular() {
			if root, err = unpack(src.URL, src.Subdir, op, lim, &res); err != nil || root == "" {
				return res, err
			}
		} else if !st.IsDir() {
			return res, fmt.Errorf("source %s: %w: %w", src.URL, catalog.ErrInstallRefused, safeunpack.ErrSpecial)
		}
	}
	rep, err := copySub(root, src.Subdir, op.Dest, lim)
	res.Files, res.Dirs, res.Bytes = rep.Files, rep.Dirs, rep.Bytes
	return res, err
}

// unpack hashes the archive into res.Resolved and extracts it: into
// op.Dest when there is no subdirectory (root "", the report in res), else
// into a directory of op.Work, returned as the root to copy the
// subdirectory from.
func unpack(archive, subdir string, op toolsrc.Op, lim safeunpack.Limits, res *Result) (root string, err error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", fmt.Errorf("archive: %v: %w", err, catalog.ErrIO)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("archive: %v: %w", err, catalog.ErrIO)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("archive: %v: %w", err, catalog.ErrIO)
	}
	res.Resolved = "sha256:" + hex.EncodeToString(h.Sum(nil))
	dest := op.Dest
	if subdir != "" {
		dest = filepath.Join(op.Work, "unpacked")
		if err := os.Mkdir(dest, 0o700); err != nil {
			return "", fmt.Errorf("archive: %v: %w", err, catalog.ErrIO)
		}
		root = dest
	}
	rep, err := safeunpack.Extract(f, st.Size(), dest, lim)
	if err != nil {
		return "", refused(err)
	}
	if root == "" {
		res.Files, res.Dirs, res.Bytes = rep.Files, rep.Dirs, rep.Bytes
	}
	return root, nil
}

// copySub copies root's subdirectory sub (root itself when "") into dest.
// sub is opened beneath root refusing every symbolic link on the way: a
// subdirectory that is a link out of the tree is refused, not followed.
func copySub(root, sub, dest string, lim safeunpack.Limits) (safeunpack.Report, error) {
	if root == "" {
		return safeunpack.Report{}, nil
	}
	if sub != "" {
		rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return safeunpack.Report{}, fmt.Errorf("source: %v: %w", err, catalog.ErrIO)
		}
		defer unix.Close(rfd)
		fd, err := unix.Openat2(rfd, sub, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		switch {
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
			return safeunpack.Report{}, fmt.Errorf("%w: subdir %q: %w (it is, or goes through, a symbolic link)", catalog.ErrInstallRefused, sub, safeunpack.ErrLink)
		case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ENOENT):
			return safeunpack.Report{}, fmt.Errorf("subdir %q: not a directory of the source: %w", sub, catalog.ErrNotFound)
		case err != nil:
			return safeunpack.Report{}, fmt.Errorf("subdir %q: %v: %w", sub, err, catalog.ErrIO)
		}
		defer unix.Close(fd)
		root = "/proc/self/fd/" + strconv.Itoa(fd)
	}
	rep, err := safeunpack.CopyTree(root, dest, lim)
	return rep, refused(err)
}

// gitEnv hardens every git command go-getter runs: no configuration but
// the repository's own and these entries, no hooks, no fsmonitor, no
// symbolic links checked out, no submodule made active (so `submodule
// update --init` fetches none), and only the https, http and file
// transports (no ext::, no ssh).
var gitEnv = [][2]string{
	{"GIT_CONFIG_NOSYSTEM", "1"},
	{"GIT_CONFIG_GLOBAL", os.DevNull},
	{"GIT_ALLOW_PROTOCOL", "https:http:file"},
	{"GIT_TERMINAL_PROMPT", "0"},
	{"GIT_ASKPASS", "/bin/false"},
	{"GIT_CONFIG_PARAMETERS", ""},
	{"GIT_DIR", ""},
	{"GIT_WORK_TREE", ""},
	{"GIT_SSH_COMMAND", "/bin/false"},
	// In the sandbox the egress proxy is the only way out, the source's
	// host on the host's loopback included: nothing is exempt from it.
	{"NO_PROXY", ""},
	{"no_proxy", ""},
}

var gitConfig = [][2]string{
	{"core.hooksPath", os.DevNull},
	{"core.fsmonitor", "false"},
	{"core.symlinks", "false"},
	{"protocol.ext.allow", "never"},
	{"protocol.allow", "user"},
	{"submodule.recurse", "false"},
	{"submodule.active", ":(exclude)*"},
	{"credential.helper", ""},
}

// setGitEnv puts the hardening into this process's environment: go-getter
// runs git with os.Environ() (or inherits it), so it is the one place they
// reach every git command.
func setGitEnv() error {
	for _, kv := range gitEnv {
		var err error
		if kv[1] == "" {
			err = os.Unsetenv(kv[0])
		} else {
			err = os.Setenv(kv[0], kv[1])
		}
		if err != nil {
			return err
		}
	}
	if err := os.Setenv("GIT_CONFIG_COUNT", strconv.Itoa(len(gitConfig))); err != nil {
		return err
	}
	for i, kv := range gitConfig {
		if err := os.Setenv("GIT_CONFIG_KEY_"+strconv.Itoa(i), kv[0]); err != nil {
			return err
		}
		if err := os.Setenv("GIT_CONFIG_VALUE_"+strconv.Itoa(i), kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// cloneGit clones src into dst, which must not exist (go-getter "updates"
// an existing directory, running git in it: never here), and returns the
// commit checked out as "git:<commit>".
func cloneGit(ctx context.Context, src *toolsrc.Source, dst string, timeout time.Duration) (string, error) {
	if err := setGitEnv(); err != nil {
		return "", fmt.Errorf("git environment: %v: %w", err, catalog.ErrInternal)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("git: %s exists: a clone is always fresh: %w", dst, catalog.ErrInternal)
	}
	req := &getter.Request{Src: "git::" + src.URL, Dst: dst, GetMode: getter.ModeDir, DisableSymlinks: true}
	if src.Ref != "" {
		req.Src += sep(src.URL) + "ref=" + src.Ref
	}
	c := &getter.Client{
		Getters:         []getter.Getter{&getter.GitGetter{Timeout: timeout}},
		Decompressors:   map[string]getter.Decompressor{},
		DisableSymlinks: true,
	}
	if _, err := c.Get(ctx, req); err != nil {
		return "", fetchErr("git", src, err)
	}
	cmd := exec.CommandContext(ctx, "git", "rev-parse", "--verify", "HEAD^{commit}")
	cmd.Dir = dst
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse HEAD: %v: %w", err, catalog.ErrIO)
	}
	commit := strings.TrimSpace(string(out))
	if toolsrc.CheckChecksum("git:"+commit) != nil {
		return "", fmt.Errorf("git rev-parse HEAD gave %q: %w", commit, catalog.ErrIO)
	}
	return "git:" + commit, nil
}

func sep(u string) string {
	if strings.Contains(u, "?") {
		return "&"
	}
	return "?"
}

// download fetches an HTTP archive into dst with go-getter's HTTP getter,
// bounded by op.MaxBytes, with no decompressor (safeunpack unpacks) and no
// X-Terraform-Get, through the sandbox's proxy (the environment's), and no
// redirect to another host.
func download(ctx context.Context, src *toolsrc.Source, dst string, op toolsrc.Op) error {
	client := &http.Client{
		Transport: &http.Transport{Proxy: proxyAlways, ForceAttemptHTTP2: true,
			TLSHandshakeTimeout: 30 * time.Second, ResponseHeaderTimeout: time.Minute},
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if len(via) >= 5 || !strings.EqualFold(r.URL.Host, via[0].URL.Host) || r.URL.Scheme != via[0].URL.Scheme {
				return fmt.Errorf("redirect to %s refused: a tool source is fetched from its own host only", r.URL.Redacted())
			}
			return nil
		},
	}
	max := op.MaxBytes
	if max <= 0 {
		max = safeunpack.DefaultLimits.MaxBytes
	}
	c := &getter.Client{
		Getters: []getter.Getter{&getter.HttpGetter{Client: client, MaxBytes: max + 1, XTerraformGetDisabled: true,
			DoNotCheckHeadFirst: true, ReadTimeout: op.Timeout}},
		Decompressors:   map[string]getter.Decompressor{},
		DisableSymlinks: true,
	}
	_, err := c.Get(ctx, &getter.Request{Src: src.URL, Dst: dst, GetMode: getter.ModeFile, DisableSymlinks: true})
	st, serr := os.Lstat(dst)
	if errors.Is(err, io.ErrShortWrite) || serr == nil && st.Size() > max {
		// The body was cut at the bound.
		return fmt.Errorf("%w: %s: %w (the download is over fetch_max_bytes, %d)", catalog.ErrInstallRefused, src.URL, safeunpack.ErrTooLarge, max)
	}
	if err != nil {
		return fetchErr("http", src, err)
	}
	if serr != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("http: %s gave no file: %w", src.URL, catalog.ErrIO)
	}
	return nil
}

// proxyAlways sends every request through the proxy the environment
// names, loopback hosts included (http.ProxyFromEnvironment sends those
// direct, which in the sandbox is its own loopback, where nothing listens).
func proxyAlways(r *http.Request) (*url.URL, error) {
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
		if r.URL.Scheme == "http" && strings.HasPrefix(strings.ToLower(k), "https") {
			continue
		}
		if v := os.Getenv(k); v != "" {
			return url.Parse(v)
		}
	}
	return nil, nil
}

// fetchErr is a getter's failure: a timeout, or the source unreachable.
func fetchErr(what string, src *toolsrc.Source, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: fetching %s took longer than fetch_timeout: %w", what, src.Locked(), catalog.ErrTimeout)
	}
	return fmt.Errorf("%s: fetching %s: %s: %w", what, src.Locked(), strings.TrimSpace(err.Error()), catalog.ErrIO)
}
