package toolbench

import (
	"encoding/json"
	"testing"
)

func TestListTokens(t *testing.T) {
	one := []json.RawMessage{json.RawMessage(`{ "name" : "x" }`)}
	if a, b := ListTokens(one), ListTokens([]json.RawMessage{json.RawMessage(`{"name":"x"}`)}); a != b || a == 0 {
		t.Errorf("spacing changes the count: %d and %d", a, b)
	}
	if ListTokens(nil) != ListTokens([]json.RawMessage{}) {
		t.Error("nil and empty differ")
	}
}

// TestSearchModeTokens holds the point of search mode: the two search
// tools cost at most 2% of what the nine servers' tools cost listed in
// full (the plan measured 35,916 tokens for them).
func TestSearchModeTokens(t *testing.T) {
	servers, err := Fixtures()
	if err != nil {
		t.Fatal(err)
	}
	var nine []Server
	for _, s := range servers {
		if s.Name != "everything" {
			nine = append(nine, s)
		}
	}
	off, on := ListTokens(AllTools(nine)), ListTokens(SearchTools())
	t.Logf("search mode off %d tokens, on %d (%.1f%% less)", off, on, 100*(1-float64(on)/float64(off)))
	if off < 30000 || off > 40000 {
		t.Errorf("nine servers' tools: %d tokens, want about 35,916", off)
	}
	if float64(on) > 0.02*float64(off) {
		t.Errorf("search tools %d tokens, more than 2%% of %d", on, off)
	}
}
