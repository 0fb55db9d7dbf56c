package main

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
)

var (
	// <tag>-<commits since>-g<hash>, as `git describe --long` prints it.
	describeLong = regexp.MustCompile(`^(.+)-([0-9]+)-g([0-9a-f]{4,40})$`)
	// A bare hash: no release tag is reachable (`--always`).
	describeHash = regexp.MustCompile(`^[0-9a-f]{4,40}$`)
	// What Debian allows in an upstream version when the package also has a
	// revision, less the hyphen, which would make the split ambiguous to readers.
	upstreamChars = regexp.MustCompile(`^[0-9][0-9A-Za-z.+~]*$`)
)

// DebianVersion turns `git describe --tags --long --always --dirty` output and
// the commit's time into an upstream version that sorts the way the history
// goes (dpkg --compare-versions):
//
//	v1.2.0-0-gabc1234        1.2.0
//	v1.2.0-rc1-0-gabc1234    1.2.0~rc1           (before 1.2.0)
//	v1.2.0-5-gabc1234        1.2.0+git20261122.191637.5.abc1234
//	abc1234                  0.0.0~git20261122.191637.abc1234   (no tag yet)
//
// A checkout with uncommitted changes ("-dirty") gets "+dirty" (".dirty"
// after a "+" already there): such a build must not pass for the commit.
func DebianVersion(describe string, commit time.Time) (string, error) {
	d, dirty := strings.CutSuffix(strings.TrimSpace(describe), "-dirty")
	stamp := "git" + commit.UTC().Format("20060102.150405")
	var v string
	switch m := describeLong.FindStringSubmatch(d); {
	case m != nil:
		base, err := tagVersion(m[1])
		if err != nil {
			return "", err
		}
		v = base
		if m[2] != "0" {
			v += "+" + stamp + "." + m[2] + "." + m[3]
		}
	case describeHash.MatchString(d):
		v = "0.0.0~" + stamp + "." + d
	default:
		return "", fmt.Errorf("git describe printed %q, which is neither TAG-N-gHASH nor a hash: %w", describe, catalog.ErrBadInput)
	}
	if dirty {
		if strings.Contains(v, "+") {
			v += ".dirty"
		} else {
			v += "+dirty"
		}
	}
	if err := CheckUpstream(v); err != nil {
		return "", err
	}
	return v, nil
}

// tagVersion is a release tag as an upstream version: "v1.2.0" is 1.2.0 and a
// pre-release "v1.2.0-rc.1" is 1.2.0~rc.1, which dpkg sorts before 1.2.0.
func tagVersion(tag string) (string, error) {
	t := strings.TrimPrefix(tag, "v")
	t = strings.ReplaceAll(t, "-", "~")
	if err := CheckUpstream(t); err != nil {
		return "", fmt.Errorf("release tag %q: %w", tag, err)
	}
	return t, nil
}

// CheckUpstream refuses what cannot be the upstream part of the package
// version: it starts with a digit and holds only [0-9A-Za-z.+~].
func CheckUpstream(v string) error {
	if len(v) > 100 || !upstreamChars.MatchString(v) {
		return fmt.Errorf("%q is not a usable upstream version (a digit first, then only 0-9 A-Z a-z . + ~; at most 100 characters): %w", v, catalog.ErrBadInput)
	}
	return nil
}
