package qdrant

import (
	"crypto/sha1"
	"time"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/internal/ids"

	"github.com/contextd/contextd/internal/nanotime"
)

// isCanonicalUUID reports whether s is a UUID as ids.Format writes it:
// 8-4-4-4-12 lower-case hex digits.
func isCanonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// idNamespace makes the name-based UUIDs of pointUUID differ from those of
// any other program hashing the same strings.
var idNamespace = [...]byte{'c', 'o', 'n', 't', 'e', 'x', 't', 'd', '/', 'i', 'd', '/', 'v', '1', 0}

// pointUUID is the point id of a record id: the id itself when it is a
// canonical UUID, else a version 5 style UUID of its SHA-1. Upper-case or
// braced UUIDs are hashed too, so that two ids differing in case never
// share a point (Qdrant would parse both to one UUID).
func pointUUID(id string) string {
	if isCanonicalUUID(id) {
		return id
	}
	h := sha1.New()
	h.Write(idNamespace[:])
	h.Write([]byte(id))
	var b [16]byte
	copy(b[:], h.Sum(nil))
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	return ids.Format(b)
}

func pointID(id string) *qc.PointId { return qc.NewIDUUID(pointUUID(id)) }

// Times are stored as Unix nanoseconds (0 for the zero time) and returned in
// UTC, so that what a Put sets in a record equals what a Get returns.
func now() time.Time { return time.Now().UTC().Round(0) }

// normTime is t as it reads back after a round trip through the payload.
func normTime(t time.Time) time.Time { return nanotime.Time(nanotime.Of(t)) }

func projectKey(p string) string { return "p:" + p }
func sessionKey(s string) string { return "s:" + s }

func vStr(s string) *qc.Value     { return qc.NewValueString(s) }
func vInt(i int64) *qc.Value      { return qc.NewValueInt(i) }
func vFloat(f float64) *qc.Value  { return qc.NewValueDouble(f) }
func vBool(b bool) *qc.Value      { return qc.NewValueBool(b) }
func vTime(t time.Time) *qc.Value { return vInt(nanotime.Of(t)) }

func vStrings(ss []string) *qc.Value {
	vals := make([]*qc.Value, len(ss))
	for i, s := range ss {
		vals[i] = vStr(s)
	}
	return qc.NewValueFromList(vals...)
}

// payload reads typed fields from a point's payload. A missing field reads
// as the zero value. Numbers are accepted as either integer or double,
// whichever way the server hands them back.
type payload map[string]*qc.Value

func (p payload) str(k string) string { return p[k].GetStringValue() }
func (p payload) boolean(k string) bool {
	return p[k].GetBoolValue()
}

func (p payload) int64(k string) int64 {
	switch v := p[k].GetKind().(type) {
	case *qc.Value_IntegerValue:
		return v.IntegerValue
	case *qc.Value_DoubleValue:
		return int64(v.DoubleValue)
	}
	return 0
}

func (p payload) int(k string) int { return int(p.int64(k)) }

func (p payload) float(k string) float64 {
	switch v := p[k].GetKind().(type) {
	case *qc.Value_DoubleValue:
		return v.DoubleValue
	case *qc.Value_IntegerValue:
		return float64(v.IntegerValue)
	}
	return 0
}

func (p payload) time(k string) time.Time { return nanotime.Time(p.int64(k)) }

func (p payload) strings(k string) []string {
	vals := p[k].GetListValue().GetValues()
	if len(vals) == 0 {
		return nil
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = v.GetStringValue()
	}
	return out
}

// Memory payload keys beyond the common ones.
const (
	keyTitle       = "title"
	keyDescription = "description"
	keyContent     = "content"
	keyOutcome     = "outcome"
	keyTags        = "tags"
	keyConfidence  = "confidence"
	keyUses        = "uses"
	keyHelpful     = "helpful"
	keyUnhelpful   = "unhelpful"
	keyArchived    = "archived"
)

func memoryPayload(m *store.Memory) map[string]*qc.Value {
	return map[string]*qc.Value{
		keyID:          vStr(m.ID),
		keyProject:     vStr(m.Project),
		keyProjectKey:  vStr(projectKey(m.Project)),
		keyTitle:       vStr(m.Title),
		keyDescription: vStr(m.Description),
		keyContent:     vStr(m.Content),
		keyOutcome:     vStr(m.Outcome),
		keyTags:        vStrings(m.Tags),
		keyConfidence:  vFloat(m.Confidence),
		keyUses:        vInt(int64(m.Uses)),
		keyHelpful:     vInt(int64(m.Helpful)),
		keyUnhelpful:   vInt(int64(m.Unhelpful)),
		keyArchived:    vBool(m.Archived),
		keyCreated:     vTime(m.Created),
		keyUpdated:     vTime(m.Updated),
		keyVersion:     vInt(m.Version),
	}
}

func memoryFrom(p payload) store.Memory {
	return store.Memory{
		ID:          p.str(keyID),
		Project:     p.str(keyProject),
		Title:       p.str(keyTitle),
		Description: p.str(keyDescription),
		Content:     p.str(keyContent),
		Outcome:     p.str(keyOutcome),
		Tags:        p.strings(keyTags),
		Confidence:  p.float(keyConfidence),
		Uses:        p.int(keyUses),
		Helpful:     p.int(keyHelpful),
		Unhelpful:   p.int(keyUnhelpful),
		Archived:    p.boolean(keyArchived),
		Created:     p.time(keyCreated),
		Updated:     p.time(keyUpdated),
		Version:     p.int64(keyVersion),
	}
}

// Checkpoint payload keys beyond the common ones.
const (
	keyName    = "name"
	keySummary = "summary"
	keyContext = "context"
	keyFull    = "full"
)

func checkpointPayload(c *store.Checkpoint) map[string]*qc.Value {
	return map[string]*qc.Value{
		keyID:         vStr(c.ID),
		keyProject:    vStr(c.Project),
		keyProjectKey: vStr(projectKey(c.Project)),
		keySession:    vStr(c.Session),
		keySessionKey: vStr(sessionKey(c.Session)),
		keyName:       vStr(c.Name),
		keySummary:    vStr(c.Summary),
		keyContext:    vStr(c.Context),
		keyFull:       vStr(c.Full),
		keyCreated:    vTime(c.Created),
	}
}

func checkpointFrom(p payload) store.Checkpoint {
	return store.Checkpoint{
		ID:      p.str(keyID),
		Project: p.str(keyProject),
		Session: p.str(keySession),
		Name:    p.str(keyName),
		Summary: p.str(keySummary),
		Context: p.str(keyContext),
		Full:    p.str(keyFull),
		Created: p.time(keyCreated),
	}
}

// Branch payload keys beyond the common ones.
const (
	keyParent = "parent"
	keyDepth  = "depth"
	keyBudget = "budget"
	keyUsed   = "used"
	keyCalls  = "calls"
	keyOpen   = "open"
	keyClosed = "closed"
)

func branchPayload(b *store.Branch) map[string]*qc.Value {
	return map[string]*qc.Value{
		keyID:          vStr(b.ID),
		keySession:     vStr(b.Session),
		keySessionKey:  vStr(sessionKey(b.Session)),
		keyProject:     vStr(b.Project),
		keyProjectKey:  vStr(projectKey(b.Project)),
		keyParent:      vStr(b.Parent),
		keyDepth:       vInt(int64(b.Depth)),
		keyDescription: vStr(b.Description),
		keyBudget:      vInt(int64(b.Budget)),
		keyUsed:        vInt(int64(b.Used)),
		keyCalls:       vInt(int64(b.Calls)),
		keyOpen:        vBool(b.Open),
		keySummary:     vStr(b.Summary),
		keyCreated:     vTime(b.Created),
		keyClosed:      vTime(b.Closed),
		keyVersion:     vInt(b.Version),
	}
}

func branchFrom(p payload) store.Branch {
	return store.Branch{
		ID:          p.str(keyID),
		Session:     p.str(keySession),
		Project:     p.str(keyProject),
		Parent:      p.str(keyParent),
		Depth:       p.int(keyDepth),
		Description: p.str(keyDescription),
		Budget:      p.int(keyBudget),
		Used:        p.int(keyUsed),
		Calls:       p.int(keyCalls),
		Open:        p.boolean(keyOpen),
		Summary:     p.str(keySummary),
		Created:     p.time(keyCreated),
		Closed:      p.time(keyClosed),
		Version:     p.int64(keyVersion),
	}
}
