package seccomp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// decode reads a profile with the strictness documented at Parse. It walks
// the token stream itself rather than using json.Unmarshal, which matches
// keys case-insensitively, keeps the last of duplicate keys, accepts null and
// silently ignores unknown fields.
func decode(data []byte) (*Profile, error) {
	d := &decoder{dec: json.NewDecoder(bytes.NewReader(data)), group: -1}
	d.dec.UseNumber()
	p, err := d.profile()
	if err == nil {
		if _, terr := d.dec.Token(); terr != io.EOF {
			err = errors.New("data after the profile's closing brace")
		}
	}
	if err == nil {
		return p, nil
	}
	err = fmt.Errorf("%w: %w", ErrInvalidProfile, err)
	if d.group >= 0 {
		return nil, &GroupError{Index: d.group, Comment: commentOf(data, d.group), Err: err}
	}
	return nil, err
}

// commentOf is the comment of group i, read leniently, for error messages
// about a group that failed to decode.
func commentOf(data []byte, i int) string {
	var v struct {
		Syscalls []struct {
			Comment string `json:"comment"`
		} `json:"syscalls"`
	}
	if json.Unmarshal(data, &v) != nil || i >= len(v.Syscalls) {
		return ""
	}
	return v.Syscalls[i].Comment
}

type decoder struct {
	dec   *json.Decoder
	group int // index of the syscall group being read, -1 outside
}

var (
	profileKeys = []string{"comment", "defaultAction", "defaultErrnoRet", "architectures", "syscalls"}
	groupKeys   = []string{"comment", "names", "action", "errnoRet", "args"}
	argKeys     = []string{"index", "value", "valueTwo", "op"}
)

func (d *decoder) profile() (*Profile, error) {
	p := &Profile{}
	err := d.object("profile", profileKeys, func(key string) error {
		var err error
		switch key {
		case "comment":
			p.Comment, err = d.str(key)
		case "defaultAction":
			var s string
			s, err = d.str(key)
			p.DefaultAction = Action(s)
		case "defaultErrnoRet":
			p.DefaultErrnoRet, err = d.errno(key)
		case "architectures":
			err = d.array(key, func(int) error {
				s, err := d.str("architectures[]")
				p.Architectures = append(p.Architectures, s)
				return err
			})
		case "syscalls":
			p.Syscalls = []Syscall{}
			err = d.array(key, func(i int) error {
				d.group = i
				g, err := d.syscall()
				if err == nil {
					p.Syscalls = append(p.Syscalls, g)
					d.group = -1
				}
				return err
			})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if p.DefaultAction == "" {
		return nil, errors.New(`"defaultAction" is missing`)
	}
	if p.Syscalls == nil {
		return nil, errors.New(`"syscalls" is missing`)
	}
	return p, nil
}

func (d *decoder) syscall() (Syscall, error) {
	var g Syscall
	seen := map[string]bool{}
	err := d.object("group", groupKeys, func(key string) error {
		seen[key] = true
		var err error
		switch key {
		case "comment":
			g.Comment, err = d.str(key)
		case "names":
			err = d.array(key, func(int) error {
				s, err := d.str("names[]")
				g.Names = append(g.Names, s)
				return err
			})
		case "action":
			var s string
			s, err = d.str(key)
			g.Action = Action(s)
		case "errnoRet":
			g.ErrnoRet, err = d.errno(key)
		case "args":
			err = d.array(key, func(j int) error {
				a, err := d.arg()
				if err != nil {
					return fmt.Errorf("args[%d]: %w", j, err)
				}
				g.Args = append(g.Args, a)
				return nil
			})
		}
		return err
	})
	if err != nil {
		return g, err
	}
	for _, k := range []string{"comment", "names", "action"} {
		if !seen[k] {
			return g, fmt.Errorf("%q is missing", k)
		}
	}
	return g, nil
}

func (d *decoder) arg() (Arg, error) {
	var a Arg
	seen := map[string]bool{}
	err := d.object("arg", argKeys, func(key string) error {
		seen[key] = true
		var err error
		switch key {
		case "index":
			var n uint64
			n, err = d.uint(key)
			if err == nil && n > MaxArgIndex {
				err = fmt.Errorf("index %d: a system call has arguments 0..%d", n, MaxArgIndex)
			}
			a.Index = uint(n)
		case "value":
			a.Value, err = d.uint(key)
		case "valueTwo":
			a.ValueTwo, err = d.uint(key)
		case "op":
			var s string
			s, err = d.str(key)
			a.Op = Operator(s)
		}
		return err
	})
	if err != nil {
		return a, err
	}
	for _, k := range []string{"index", "value", "op"} {
		if !seen[k] {
			return a, fmt.Errorf("%q is missing", k)
		}
	}
	return a, nil
}

// object reads an object whose keys must be among known (exact spelling,
// each at most once), calling field to read each value.
func (d *decoder) object(what string, known []string, field func(key string) error) error {
	if err := d.delim('{', what); err != nil {
		return err
	}
	seen := map[string]bool{}
	for d.dec.More() {
		tok, err := d.dec.Token()
		if err != nil {
			return syntaxErr(err)
		}
		key := tok.(string) // object keys are always strings
		if !contains(known, key) {
			return unknownKey(what, key, known)
		}
		if seen[key] {
			return fmt.Errorf("%q appears twice", key)
		}
		seen[key] = true
		if err := field(key); err != nil {
			return err
		}
	}
	return d.delim('}', what)
}

func (d *decoder) array(what string, elem func(i int) error) error {
	if err := d.delim('[', what); err != nil {
		return err
	}
	for i := 0; d.dec.More(); i++ {
		if err := elem(i); err != nil {
			return err
		}
	}
	return d.delim(']', what)
}

func (d *decoder) delim(want json.Delim, what string) error {
	tok, err := d.dec.Token()
	if err != nil {
		return syntaxErr(err)
	}
	if got, ok := tok.(json.Delim); !ok || got != want {
		kind := map[json.Delim]string{'{': "an object", '[': "an array", '}': "the end of the object", ']': "the end of the array"}[want]
		return fmt.Errorf("%s: expected %s, got %s", what, kind, describe(tok))
	}
	return nil
}

func (d *decoder) str(what string) (string, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return "", syntaxErr(err)
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("%s: expected a string, got %s", what, describe(tok))
	}
	return s, nil
}

func (d *decoder) uint(what string) (uint64, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return 0, syntaxErr(err)
	}
	n, ok := tok.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%s: expected a number, got %s", what, describe(tok))
	}
	v, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %s is not an integer in 0..2^64-1 (write it in decimal)", what, n)
	}
	return v, nil
}

func (d *decoder) errno(what string) (uint, error) {
	v, err := d.uint(what)
	if err != nil {
		return 0, err
	}
	if v < 1 || v > MaxErrno {
		return 0, fmt.Errorf("%s %d: not in 1..%d", what, v, MaxErrno)
	}
	return uint(v), nil
}

func describe(tok json.Token) string {
	switch t := tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		return map[json.Delim]string{'{': "an object", '[': "an array", '}': "'}'", ']': "']'"}[t]
	case string:
		return fmt.Sprintf("the string %q", t)
	case json.Number:
		return "the number " + string(t)
	case bool:
		return strconv.FormatBool(t)
	}
	return fmt.Sprint(tok)
}

func syntaxErr(err error) error {
	if err == io.EOF {
		return errors.New("unexpected end of JSON")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("JSON syntax error at byte %d: %v", se.Offset, se)
	}
	return err
}

func unknownKey(what, key string, known []string) error {
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return fmt.Errorf("unknown field %q in %s (did you mean %q?)", key, what, k)
		}
	}
	switch key {
	case "archMap", "includes", "excludes", "flags", "listenerPath", "listenerMetadata", "name", "errno":
		return fmt.Errorf("field %q of the Docker/OCI format is not supported by contextd profiles (known fields of a %s: %s)",
			key, what, strings.Join(known, ", "))
	}
	return fmt.Errorf("unknown field %q in %s (known: %s)", key, what, strings.Join(known, ", "))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
