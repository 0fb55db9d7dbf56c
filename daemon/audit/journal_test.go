package audit

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/contextd/contextd/internal/syncbuf"
)

var fieldName = regexp.MustCompile(`^[A-Z0-9][A-Z0-9_]{0,63}$`)

type sent struct {
	msg  string
	pri  journal.Priority
	vars map[string]string
}

func TestJournal(t *testing.T) {
	o := testOptions(t)
	var logged syncbuf.Buffer
	o.Logger = slogTo(&logged)
	l := openTest(t, o)
	defer l.Close()
	var got []sent
	fail := false
	l.send = func(msg string, pri journal.Priority, vars map[string]string) error {
		if fail {
			return errors.New("journald is away")
		}
		got = append(got, sent{msg, pri, vars})
		return nil
	}
	r := call(1)
	r.Error = "CTXD-E020"
	r.SecondLayer, r.SecondLayerRules = 1, map[string]int{"generic-api-key": 1}
	if err := l.Append(r); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("sent %d entries", len(got))
	}
	s := got[0]
	want := map[string]string{
		"MESSAGE_ID":                  MessageID,
		"SYSLOG_IDENTIFIER":           "contextd",
		"CONTEXTD_SEQ":                "1",
		"CONTEXTD_HASH":               r.Hash,
		"CONTEXTD_TOOL":               "safe_bash",
		"CONTEXTD_SESSION":            "s1",
		"CONTEXTD_EXIT":               "1",
		"CONTEXTD_ERROR":              "CTXD-E020",
		"CONTEXTD_PEER_PID":           "4001",
		"CONTEXTD_PEER_UID":           "1000",
		"CONTEXTD_SCOPE":              "contextd-safe_bash-1.scope",
		"CONTEXTD_NETWORK":            "none",
		"CONTEXTD_FINDINGS":           "aws-access-token:1",
		"CONTEXTD_SECOND_LAYER":       "1",
		"CONTEXTD_SECOND_LAYER_RULES": "generic-api-key:1",
		"CONTEXTD_ARGS":               `{"command":"make test && echo 1 > out.txt"}`,
	}
	for k, v := range want {
		if s.vars[k] != v {
			t.Errorf("%s = %q, want %q", k, s.vars[k], v)
		}
	}
	for k := range s.vars {
		if !fieldName.MatchString(k) {
			t.Errorf("%s is not a journal field name", k)
		}
	}
	if s.pri != journal.PriNotice || !strings.HasPrefix(s.msg, "#1 safe_bash exit=1 error=CTXD-E020 ") {
		t.Errorf("priority %d, message %q", s.pri, s.msg)
	}

	// journald going away fails nothing, and is said once.
	fail = true
	fill(t, l, 2, 3)
	if n := strings.Count(logged.String(), "cannot send records to the journal"); n != 1 {
		t.Errorf("warned %d times: %s", n, logged.String())
	}
}

func TestJournalSender(t *testing.T) {
	if journalSender(JournalOff) != nil {
		t.Error("JournalOff sends")
	}
	t.Setenv("INVOCATION_ID", "")
	t.Setenv("JOURNAL_STREAM", "")
	if journalSender(JournalAuto) != nil {
		t.Error("JournalAuto sends outside systemd")
	}
	if (journalSender(JournalOn) != nil) != journal.Enabled() {
		t.Error("JournalOn does not follow journald's presence")
	}
}
