package qdrant

import (
	"reflect"
	"testing"
	"time"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/internal/ids"
)

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := ids.New()
		if !isCanonicalUUID(id) || id[14] != '4' || !reflect.DeepEqual(pointUUID(id), id) {
			t.Fatalf("ids.New() = %q: not a canonical version 4 UUID used as is", id)
		}
		if seen[id] {
			t.Fatalf("ids.New() repeated %q", id)
		}
		seen[id] = true
	}
	for _, id := range []string{"", "abc", "6F1C2A9E-3B4D-4E5F-8A7B-1C2D3E4F5A6B", "{6f1c2a9e-3b4d-4e5f-8a7b-1c2d3e4f5a6b}", "' OR 1=1 --"} {
		u := pointUUID(id)
		if !isCanonicalUUID(u) || u[14] != '5' || u == id {
			t.Errorf("pointUUID(%q) = %q: want a version 5 style UUID", id, u)
		}
		if pointUUID(id) != u {
			t.Errorf("pointUUID(%q) not deterministic", id)
		}
	}
	if pointUUID("a") == pointUUID("b") {
		t.Error("pointUUID maps two ids to one point")
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	ts := time.Date(2025, 3, 4, 5, 6, 7, 891011121, time.FixedZone("x", 3600))
	m := store.Memory{
		ID: ids.New(), Project: "", Title: "t \x00 日本語", Description: "d", Content: "c", Outcome: store.Failure,
		Tags: []string{"a", "b"}, Confidence: 0.123456789, Uses: 3, Helpful: 2, Unhelpful: 1, Archived: true,
		Created: ts, Updated: ts.Add(time.Second), Version: 7,
	}
	got := memoryFrom(memoryPayload(&m))
	want := m
	want.Created, want.Updated = normTime(m.Created), normTime(m.Updated)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("memory round trip:\n got %+v\nwant %+v", got, want)
	}
	if !got.Created.Equal(ts) {
		t.Errorf("Created %v, want an instant equal to %v", got.Created, ts)
	}
	m.Tags = nil
	if got := memoryFrom(memoryPayload(&m)); got.Tags != nil {
		t.Errorf("nil Tags came back as %#v", got.Tags)
	}

	c := store.Checkpoint{ID: "x", Project: "/p", Session: "s", Name: "n", Summary: "su", Context: "co", Full: "fu", Created: normTime(ts)}
	if got := checkpointFrom(checkpointPayload(&c)); got != c {
		t.Errorf("checkpoint round trip: %+v, want %+v", got, c)
	}
	b := store.Branch{ID: "y", Session: "s", Project: "/p", Parent: "x", Depth: 2, Description: "d", Budget: 100, Used: 5,
		Calls: 3, Open: false, Summary: "su", Created: normTime(ts), Version: 4}
	if got := branchFrom(branchPayload(&b)); got != b {
		t.Errorf("branch round trip (zero Closed): %+v, want %+v", got, b)
	}

	// Numbers read whichever way the server sends them.
	p := payload{"i": qc.NewValueDouble(42), "f": qc.NewValueInt(1)}
	if p.int64("i") != 42 || p.float("f") != 1 || p.int64("missing") != 0 {
		t.Error("payload numbers: integer/double not accepted both ways")
	}
}

func TestScopeKeys(t *testing.T) {
	if projectKey(store.Global) == "" || sessionKey("") == "" {
		t.Error("a scope key is empty")
	}
	if projectKey("/a") == projectKey("/b") || projectKey("") == projectKey("/") {
		t.Error("scope keys collide")
	}
}

func TestSearchRequest(t *testing.T) {
	scope := []string{"/p", store.Global}
	conds := func(r *qc.QueryPoints) []string {
		var out []string
		for _, c := range r.GetFilter().GetMust() {
			out = append(out, c.GetField().GetKey())
		}
		return out
	}

	for _, q := range []store.MemoryQuery{
		{Text: "anything"},                                   // no project
		{Text: " ?! ", Projects: scope},                      // no word
		{Text: "", Projects: scope, Limit: 5},                // no word, no vector
		{Text: "", Projects: scope, Vector: []float32{1, 2}}, // a vector of another size
	} {
		if r := searchRequest("m", q, 3); r != nil {
			t.Errorf("searchRequest(%+v) = %v, want nil", q, r)
		}
	}

	r := searchRequest("m", store.MemoryQuery{Text: "flaky tests", Projects: scope}, 0)
	if r.GetLimit() != defaultSearchLimit || r.GetUsing() != vecText || r.GetQuery().GetNearest().GetSparse() == nil {
		t.Errorf("lexical request: %v", r)
	}
	if got, want := conds(r), []string{keyProjectKey, keyArchived}; !reflect.DeepEqual(got, want) {
		t.Errorf("lexical filter keys %q, want %q", got, want)
	}
	kw := r.GetFilter().GetMust()[0].GetField().GetMatch().GetKeywords().GetStrings()
	if !reflect.DeepEqual(kw, []string{projectKey("/p"), projectKey(store.Global)}) {
		t.Errorf("project keys %q", kw)
	}
	if r.GetFilter().GetMust()[1].GetField().GetMatch().GetBoolean() != false {
		t.Error("archived filter is not archived == false")
	}

	r = searchRequest("m", store.MemoryQuery{Text: "x", Projects: scope, MinConfidence: 0.4, IncludeArchived: true, Limit: 7}, 0)
	if got, want := conds(r), []string{keyProjectKey, keyConfidence}; !reflect.DeepEqual(got, want) {
		t.Errorf("filter keys %q, want %q", got, want)
	}
	if r.GetFilter().GetMust()[1].GetField().GetRange().GetGte() != 0.4 || r.GetLimit() != 7 {
		t.Errorf("min confidence / limit: %v", r)
	}

	// With a dense vector of the collection's size: two prefetches, fused.
	r = searchRequest("m", store.MemoryQuery{Text: "x", Projects: scope, Vector: []float32{1, 2, 3}}, 3)
	if len(r.GetPrefetch()) != 2 || r.GetQuery().GetFusion() != qc.Fusion_RRF ||
		r.GetPrefetch()[0].GetUsing() != vecText || r.GetPrefetch()[1].GetUsing() != vecDense {
		t.Fatalf("hybrid request: %v", r)
	}
	if _, ok := r.GetQuery().GetVariant().(*qc.Query_Fusion); !ok {
		t.Errorf("hybrid query is %T, want a fusion", r.GetQuery().GetVariant())
	}
	for _, pf := range r.GetPrefetch() {
		if pf.GetFilter() == nil || pf.GetLimit() < uint64(defaultSearchLimit) {
			t.Errorf("prefetch without the filter or with a short limit: %v", pf)
		}
	}
	// The same vector with a collection without "dense": lexical only.
	if r = searchRequest("m", store.MemoryQuery{Text: "x", Projects: scope, Vector: []float32{1, 2, 3}}, 0); len(r.GetPrefetch()) != 0 || r.GetUsing() != vecText {
		t.Errorf("request without a dense vector in the collection: %v", r)
	}
	// No words but a vector: dense only.
	if r = searchRequest("m", store.MemoryQuery{Text: "--", Projects: scope, Vector: []float32{1, 2, 3}}, 3); r.GetUsing() != vecDense {
		t.Errorf("dense-only request: %v", r)
	}
}
