package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
)

var commitTime = time.Date(2026, 11, 22, 19, 16, 37, 0, time.UTC)

func TestDebianVersion(t *testing.T) {
	tests := []struct {
		describe string
		want     string
		err      error
	}{
		{"08a675a", "0.0.0~git20261122.191637.08a675a", nil},
		{"08a675a-dirty", "0.0.0~git20261122.191637.08a675a+dirty", nil},
		{"v1.2.0-0-g08a675a", "1.2.0", nil},
		{"v1.2.0-0-g08a675a-dirty", "1.2.0+dirty", nil},
		{"v1.2.0-5-g08a675a", "1.2.0+git20261122.191637.5.08a675a", nil},
		{"v1.2.0-5-g08a675a-dirty", "1.2.0+git20261122.191637.5.08a675a.dirty", nil},
		{"v1.2.0-rc.1-0-g08a675a", "1.2.0~rc.1", nil},
		{"v1.2.0-rc1-3-g08a675a", "1.2.0~rc1+git20261122.191637.3.08a675a", nil},
		{"  v2.0.0-0-g08a675a\n", "2.0.0", nil},
		{"", "", catalog.ErrBadInput},
		{"not a describe", "", catalog.ErrBadInput},
		{"vX-0-g08a675a", "", catalog.ErrBadInput},          // tag without a digit
		{"v1.0_beta-0-g08a675a", "", catalog.ErrBadInput},   // '_' is not allowed
		{"v1.0 beta-0-g08a675a", "", catalog.ErrBadInput},   // nor a space
		{"v1.0-2-gNOTHEX", "", catalog.ErrBadInput},         // not a hash
		{"release-1.0-0-g08a675a", "", catalog.ErrBadInput}, // starts with a letter
	}
	for _, tt := range tests {
		got, err := DebianVersion(tt.describe, commitTime)
		if !errors.Is(err, tt.err) || got != tt.want {
			t.Errorf("DebianVersion(%q) = %q, %v; want %q, %v", tt.describe, got, err, tt.want, tt.err)
		}
	}
}

// The versions sort the way the history goes, as dpkg itself compares them.
func TestDebianVersionOrder(t *testing.T) {
	later := commitTime.Add(time.Hour)
	steps := []struct {
		describe string
		when     time.Time
	}{
		{"08a675a", commitTime},
		{"1234abc", later},               // a later commit, still no tag
		{"v0.1.0-rc1-0-gabcdef0", later}, // first pre-release
		{"v0.1.0-rc1-2-gabcdef1", later},
		{"v0.1.0-0-gabcdef2", later}, // the release
		{"v0.1.0-1-gabcdef3", later}, // a commit after it
		{"v0.1.0-1-gabcdef3-dirty", later},
		{"v0.1.1-0-gabcdef4", later},
	}
	var prev string
	for i, s := range steps {
		v, err := DebianVersion(s.describe, s.when)
		if err != nil {
			t.Fatalf("%q: %v", s.describe, err)
		}
		if i > 0 {
			if err := exec.Command("dpkg", "--compare-versions", prev+"-1", "lt", v+"-1").Run(); err != nil {
				t.Errorf("dpkg does not sort %s before %s (%v)", prev, v, err)
			}
		}
		prev = v
	}
}

func TestCheckUpstream(t *testing.T) {
	for _, tt := range []struct {
		v  string
		ok bool
	}{
		{"0.0.1~e2e1", true},
		{"1.2.3+git20261122.5.abc", true},
		{"1", true},
		{"", false},
		{"v1.0", false},
		{"1.0-1", false}, // the revision is added separately
		{"1.0:2", false},
		{"1.0 ", false},
		{"1." + strings.Repeat("9", 100), false},
	} {
		err := CheckUpstream(tt.v)
		if tt.ok != (err == nil) || (err != nil && !errors.Is(err, catalog.ErrBadInput)) {
			t.Errorf("CheckUpstream(%q) = %v, want ok=%t", tt.v, err, tt.ok)
		}
	}
}

// Whatever git describe prints, the result is a valid upstream version or a
// bad-input error, never a panic or something dpkg would refuse.
func FuzzDebianVersion(f *testing.F) {
	for _, s := range []string{"08a675a", "v1.2.0-5-g08a675a-dirty", "v1.2.0-rc.1-0-g08a675a", "x-1-gabc", "v-0-gabcd"} {
		f.Add(s, int64(1795000000))
	}
	f.Fuzz(func(t *testing.T, describe string, sec int64) {
		v, err := DebianVersion(describe, time.Unix(sec%(1<<40), 0))
		if err != nil {
			if !errors.Is(err, catalog.ErrBadInput) {
				t.Fatalf("error %v is not a bad-input error", err)
			}
			return
		}
		if CheckUpstream(v) != nil {
			t.Fatalf("DebianVersion(%q) = %q, which CheckUpstream refuses", describe, v)
		}
	})
}
