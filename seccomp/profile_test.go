package seccomp

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const validProfile = `{
  "comment": "test profile",
  "defaultAction": "SCMP_ACT_ALLOW",
  "defaultErrnoRet": 1,
  "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"],
  "syscalls": [
    {"comment": "no io_uring", "names": ["io_uring_setup", "io_uring_enter"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
    {"comment": "no ns clone", "names": ["clone"], "action": "SCMP_ACT_ERRNO",
     "args": [{"index": 0, "value": 268435456, "valueTwo": 268435456, "op": "SCMP_CMP_MASKED_EQ"}]},
    {"comment": "no ns clone 2", "names": ["clone"], "action": "SCMP_ACT_ERRNO",
     "args": [{"index": 0, "value": 131072, "valueTwo": 131072, "op": "SCMP_CMP_MASKED_EQ"}]},
    {"comment": "and", "names": ["socket"], "action": "SCMP_ACT_KILL",
     "args": [{"index": 0, "value": 16, "op": "SCMP_CMP_EQ"}, {"index": 1, "value": 3, "op": "SCMP_CMP_GE"}]},
    {"comment": "max value", "names": ["personality"], "action": "SCMP_ACT_TRAP",
     "args": [{"index": 0, "value": 18446744073709551615, "op": "SCMP_CMP_LT"}]}
  ]
}`

func TestParseValid(t *testing.T) {
	p, err := Parse([]byte(validProfile))
	if err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != ActAllow || p.DefaultErrnoRet != 1 || len(p.Syscalls) != 5 || p.Comment != "test profile" {
		t.Fatalf("parsed %+v", p)
	}
	if a := p.Syscalls[3].Args; len(a) != 2 || a[1] != (Arg{Index: 1, Value: 3, Op: OpGreaterEqual}) {
		t.Fatalf("args %+v", a)
	}
	if v := p.Syscalls[4].Args[0].Value; v != 1<<64-1 {
		t.Fatalf("value %d", v)
	}
	// json.Marshal gives the format back.
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse(js)
	if err != nil {
		t.Fatalf("re-parse of %s: %v", js, err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Fatalf("round trip changed the profile:\n%+v\n%+v", p, q)
	}
}

// edit returns validProfile with old replaced by new (which must occur).
func edit(t *testing.T, old, new string) string {
	t.Helper()
	if !strings.Contains(validProfile, old) {
		t.Fatalf("test bug: %q not in validProfile", old)
	}
	return strings.Replace(validProfile, old, new, 1)
}

func TestParseErrors(t *testing.T) {
	type tc struct {
		name    string
		json    string
		group   int    // index in GroupError, -1: not a group error
		comment string // expected GroupError.Comment
		msg     string // substring of the message
	}
	cases := []tc{
		{"empty", ``, -1, "", "unexpected end"},
		{"not object", `[]`, -1, "", "expected an object"},
		{"syntax", `{"defaultAction": }`, -1, "", "syntax error"},
		{"trailing", validProfile + `{}`, -1, "", "after the profile"},
		{"missing default", `{"syscalls": []}`, -1, "", `"defaultAction" is missing`},
		{"missing syscalls", `{"defaultAction": "SCMP_ACT_ALLOW"}`, -1, "", `"syscalls" is missing`},
		{"unknown top field", edit(t, `"comment": "test profile"`, `"comment": "x", "flags": []`), -1, "", `"flags" of the Docker/OCI format is not supported`},
		{"case", edit(t, `"defaultAction"`, `"DefaultAction"`), -1, "", `did you mean "defaultAction"`},
		{"duplicate key", edit(t, `"defaultErrnoRet": 1,`, `"defaultErrnoRet": 1, "defaultErrnoRet": 2,`), -1, "", "appears twice"},
		{"null", edit(t, `"comment": "test profile"`, `"comment": null`), -1, "", "got null"},
		{"unknown default action", edit(t, `"defaultAction": "SCMP_ACT_ALLOW"`, `"defaultAction": "SCMP_ACT_MAYBE"`), -1, "", `unknown action "SCMP_ACT_MAYBE"`},
		{"trace unsupported", edit(t, `"defaultAction": "SCMP_ACT_ALLOW"`, `"defaultAction": "SCMP_ACT_TRACE"`), -1, "", "not supported"},
		{"default errno 0", edit(t, `"defaultErrnoRet": 1`, `"defaultErrnoRet": 0`), -1, "", "not in 1..4095"},
		{"default errno big", edit(t, `"defaultErrnoRet": 1`, `"defaultErrnoRet": 4096`), -1, "", "not in 1..4095"},
		{"negative", edit(t, `"defaultErrnoRet": 1`, `"defaultErrnoRet": -1`), -1, "", "not an integer"},
		{"float", edit(t, `"defaultErrnoRet": 1`, `"defaultErrnoRet": 1.5`), -1, "", "not an integer"},
		{"unknown arch", edit(t, `"SCMP_ARCH_AARCH64"`, `"SCMP_ARCH_Z80"`), -1, "", `unknown architecture "SCMP_ARCH_Z80"`},
		{"dup arch", edit(t, `"SCMP_ARCH_AARCH64"`, `"SCMP_ARCH_X86_64"`), -1, "", "listed twice"},
		{"arch not string", edit(t, `"SCMP_ARCH_AARCH64"`, `7`), -1, "", "expected a string"},

		{"group unknown field", edit(t, `"comment": "no io_uring",`, `"comment": "no io_uring", "includes": {},`), 0, "no io_uring", `"includes"`},
		{"group missing names", edit(t, `"names": ["io_uring_setup", "io_uring_enter"], `, ``), 0, "no io_uring", `"names" is missing`},
		{"group empty names", edit(t, `["io_uring_setup", "io_uring_enter"]`, `[]`), 0, "no io_uring", "names is empty"},
		{"group empty name", edit(t, `"io_uring_enter"`, `""`), 0, "no io_uring", "not a system call name"},
		{"group odd name", edit(t, `"io_uring_enter"`, `"Open"`), 0, "no io_uring", "not a system call name"},
		{"group dup name", edit(t, `"io_uring_enter"`, `"io_uring_setup"`), 0, "no io_uring", "listed twice"},
		{"group no comment", edit(t, `"comment": "no io_uring"`, `"comment": "  "`), 0, "  ", "comment is empty"},
		{"group missing comment", edit(t, `"comment": "no io_uring", `, ``), 0, "", `"comment" is missing`},
		{"group unknown action", edit(t, `"action": "SCMP_ACT_KILL"`, `"action": "SCMP_ACT_KILL_ALL"`), 3, "and", `unknown action "SCMP_ACT_KILL_ALL"`},
		{"group errno not errno", edit(t, `"action": "SCMP_ACT_KILL",`, `"action": "SCMP_ACT_KILL", "errnoRet": 1,`), 3, "and", "errnoRet is set but action"},
		{"group errno 0", edit(t, `"errnoRet": 38`, `"errnoRet": 0`), 0, "no io_uring", "not in 1..4095"},
		{"group same as default", edit(t, `"action": "SCMP_ACT_TRAP"`, `"action": "SCMP_ACT_ALLOW"`), 4, "max value", "is the default action"},
		{"arg index", edit(t, `{"index": 1, "value": 3`, `{"index": 6, "value": 3`), 3, "and", "index 6"},
		{"arg index huge", edit(t, `{"index": 1, "value": 3`, `{"index": 18446744073709551616, "value": 3`), 3, "and", "not an integer"},
		{"arg same index", edit(t, `{"index": 1, "value": 3`, `{"index": 0, "value": 3`), 3, "and", "index 0 compared twice"},
		{"arg unknown op", edit(t, `"op": "SCMP_CMP_GE"`, `"op": "SCMP_CMP_IN"`), 3, "and", `unknown op "SCMP_CMP_IN"`},
		{"arg missing op", edit(t, `, "op": "SCMP_CMP_GE"`, ``), 3, "and", `"op" is missing`},
		{"arg missing value", edit(t, `"value": 3, `, ``), 3, "and", `"value" is missing`},
		{"arg unknown field", edit(t, `"value": 3,`, `"value": 3, "valueThree": 1,`), 3, "and", `unknown field "valueThree"`},
		{"arg valueTwo without mask", edit(t, `"value": 3,`, `"value": 3, "valueTwo": 1,`), 3, "and", "valueTwo is only used"},
		{"arg masked never", edit(t, `"value": 131072, "valueTwo": 131072`, `"value": 131072, "valueTwo": 131073`), 2, "no ns clone 2", "can never hold"},
		{"uncond plus cond", edit(t, `["io_uring_setup", "io_uring_enter"]`, `["io_uring_setup", "clone"]`), 1, "no ns clone", "has no args"},
		{"different actions", edit(t, `"comment": "no ns clone 2", "names": ["clone"], "action": "SCMP_ACT_ERRNO"`,
			`"comment": "no ns clone 2", "names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38`), 2, "no ns clone 2", "different action"},
		{"too many args", edit(t, `{"index": 0, "value": 16, "op": "SCMP_CMP_EQ"}`, strings.Repeat(`{"index": 0, "value": 16, "op": "SCMP_CMP_EQ"},`, 6)+`{"index": 0, "value": 16, "op": "SCMP_CMP_EQ"}`), 3, "and", "8 conditions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse([]byte(c.json))
			if err == nil {
				t.Fatalf("no error; parsed %+v", p)
			}
			if !errors.Is(err, ErrInvalidProfile) {
				t.Errorf("errors.Is(ErrInvalidProfile) false for %v", err)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not contain %q", err, c.msg)
			}
			var ge *GroupError
			switch {
			case c.group < 0 && errors.As(err, &ge):
				t.Errorf("unexpected GroupError %v", ge)
			case c.group >= 0 && !errors.As(err, &ge):
				t.Errorf("not a GroupError: %v", err)
			case c.group >= 0 && (ge.Index != c.group || ge.Comment != c.comment):
				t.Errorf("GroupError index %d comment %q, want %d %q (%v)", ge.Index, ge.Comment, c.group, c.comment, err)
			}
		})
	}
}

func TestErrnoDefaults(t *testing.T) {
	p := &Profile{DefaultAction: ActAllow, Syscalls: []Syscall{{Comment: "c", Names: []string{"x"}, Action: ActErrno}}}
	if got := p.groupOutcome(&p.Syscalls[0]).errno; got != DefaultErrno {
		t.Errorf("no defaultErrnoRet: errno %d, want EPERM", got)
	}
	p.DefaultErrnoRet = 38
	if got := p.groupOutcome(&p.Syscalls[0]).errno; got != 38 {
		t.Errorf("defaultErrnoRet 38: errno %d", got)
	}
	p.Syscalls[0].ErrnoRet = 13
	if got := p.groupOutcome(&p.Syscalls[0]).errno; got != 13 {
		t.Errorf("errnoRet 13: errno %d", got)
	}
	// ERRNO(EPERM) groups under a default of ERRNO with defaultErrnoRet
	// EPERM do nothing and are refused.
	p = &Profile{DefaultAction: ActErrno, Syscalls: []Syscall{{Comment: "c", Names: []string{"x"}, Action: ActErrno, ErrnoRet: 1}}}
	if err := p.Validate(); !errors.Is(err, ErrInvalidProfile) {
		t.Errorf("group equal to default: %v", err)
	}
	// KILL and KILL_THREAD are the same action.
	p = &Profile{DefaultAction: ActKill, Syscalls: []Syscall{{Comment: "c", Names: []string{"x"}, Action: ActKillThread}}}
	if err := p.Validate(); !errors.Is(err, ErrInvalidProfile) {
		t.Errorf("KILL_THREAD group under KILL default: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(validProfile))
	f.Add([]byte(`{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[]}`))
	f.Add([]byte(`{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":38,"syscalls":[{"comment":"c","names":["read"],"action":"SCMP_ACT_ALLOW"}]}`))
	f.Add([]byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"comment":"c","names":["clone"],"action":"SCMP_ACT_ERRNO","args":[{"index":0,"value":2114060288,"valueTwo":0,"op":"SCMP_CMP_MASKED_EQ"}]}]}`))
	f.Add([]byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"comment":"c","names":["a"],"action":"SCMP_ACT_LOG","args":[{"index":5,"value":1,"op":"SCMP_CMP_NE"}]}],"architectures":["SCMP_ARCH_X32"]}`))
	f.Add([]byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"comment":"c","names":["a"],"action":"SCMP_ACT_KILL_PROCESS"}`))
	f.Add([]byte(`{"a":1e999,"b":"\ud800","c":[[[[{}]]]]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			if p != nil {
				t.Fatal("profile and error")
			}
			if !errors.Is(err, ErrInvalidProfile) {
				t.Fatalf("error not ErrInvalidProfile: %v", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("parsed profile does not validate: %v", err)
		}
		js, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Parse(js)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", js, err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip changed the profile:\n%+v\n%+v", p, q)
		}
	})
}

func TestMarshalEmpty(t *testing.T) {
	js, err := json.Marshal(&Profile{DefaultAction: ActErrno})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(js); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
}
