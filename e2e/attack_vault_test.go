//go:build e2e

package e2e

// Attacks on reversible redaction (issue 25, item 11): safe_write puts a
// secret back only into the file it was read from. The agent reads a .env,
// then makes the path it writes name another file (a symbolic link swapped
// in, a directory renamed and replaced by a link) and writes the placeholders
// back. What counts is the host's disk: the other file must not hold the
// secret, whatever the call's (scrubbed) output says.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// vaultPlaceholders is what an agent writes back after reading rel: the
// file's text as safe_read showed it (placeholders in place of secrets),
// without the line numbers.
func vaultPlaceholders(t *testing.T, sess []string, rel string) string {
	t.Helper()
	e := jsonTool(t, sess, "safe_read", "", rel)
	if e.Error != nil {
		t.Fatalf("safe_read %s: %+v", rel, e.Error)
	}
	var plain strings.Builder
	for _, line := range strings.SplitAfter(e.Data, "\n") {
		if _, rest, ok := strings.Cut(line, "\t"); ok {
			plain.WriteString(rest)
		}
	}
	if !strings.Contains(plain.String(), "[REDACTED:") {
		t.Fatalf("safe_read %s shows no placeholder: %q", rel, e.Data)
	}
	return plain.String()
}

// secretsOnDisk fails t for each secret found in any file below dir (on the
// host, unscrubbed).
func secretsOnDisk(t *testing.T, what, dir string, secrets []string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s: a secret read from another file was written into %s", what, p)
				break
			}
		}
		return nil
	})
}

func TestAttackVaultSwap(t *testing.T) {
	file, secrets := plantedSecrets(t)
	top := "vault-" + devTag(8)
	root := filepath.Join(env.project, top)
	t.Cleanup(func() { os.RemoveAll(root) })
	mkfile := func(rel, content string) {
		t.Helper()
		if err := devWriteFile(filepath.Join(root, rel), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const page = "<html>public page</html>\n"
	sh := func(script string) {
		t.Helper()
		mustCode(t, tool(t, "safe_bash", "", "cd "+shq(top)+" && "+script), 0)
	}

	// Each attack: the .env read at dir/.env, the swap made from safe_bash
	// after the read, and the directory the write would carry the secrets
	// into, which must hold none of them afterwards.
	attacks := []struct {
		name, dir, swap, victim string
	}{
		// The .env read becomes a link to a page the user publishes.
		{"symlink swapped in", "a", "mv a/.env a/.env.orig && ln -s ../public/index.html a/.env", "public"},
		// The directory of the .env read is renamed and its name made a
		// link to a public directory, where the write would create .env.
		{"directory swapped for a link", "b", "mv b b-old && ln -s site b", "site"},
		// The .env read is replaced by another file under the same name
		// (a new inode): its placeholders do not come from that file.
		{"file replaced in place", "c", "mv c/.env c-env.orig && printf 'PUBLIC=1\\n' > c/.env", "c"},
	}
	mkfile("public/index.html", page)
	mkfile("site/index.html", page)
	for _, at := range attacks {
		t.Run(at.name, func(t *testing.T) {
			sess := []string{"CONTEXTD_SESSION=e2e-vault-" + devTag(8)}
			mkfile(at.dir+"/.env", file)
			text := vaultPlaceholders(t, sess, top+"/"+at.dir+"/.env")
			sh(at.swap)
			w := jsonTool(t, sess, "safe_write", text, top+"/"+at.dir+"/.env")
			secretsOnDisk(t, at.name, filepath.Join(root, at.victim), secrets)
			if w.Error == nil {
				t.Errorf("safe_write after the swap was not refused: %+v", w)
			}
		})
	}

	t.Run("control: the same file, written twice", func(t *testing.T) {
		// Without a swap the secrets come back, byte for byte, and still do
		// on a second write (the first one made a new file).
		sess := []string{"CONTEXTD_SESSION=e2e-vault-same-" + devTag(6)}
		mkfile("d/.env", file)
		text := vaultPlaceholders(t, sess, top+"/d/.env")
		for i, edit := range []string{"LOG_LEVEL=debug", "LOG_LEVEL=trace"} {
			edited := strings.Replace(text, "LOG_LEVEL=info", edit, 1)
			w := jsonTool(t, sess, "safe_write", edited, top+"/d/.env")
			if w.Error != nil {
				t.Fatalf("write %d of the file read: %+v", i+1, w.Error)
			}
			got, err := os.ReadFile(filepath.Join(root, "d", ".env"))
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.Replace(file, "LOG_LEVEL=info", edit, 1); string(got) != want {
				t.Fatalf("write %d: the secrets are not back byte for byte:\n%q\nwant\n%q", i+1, got, want)
			}
		}
	})
}
