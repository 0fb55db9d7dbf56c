package nanotime

import (
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		t    time.Time
		want int64
	}{
		{time.Time{}, 0},
		{time.Unix(0, 1).UTC(), 1},
		{time.Date(2026, 12, 7, 15, 0, 0, 123456789, time.UTC), 1796655600123456789},
		{time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC), -1e9},
	} {
		if got := Of(tc.t); got != tc.want {
			t.Errorf("Of(%v) = %d, want %d", tc.t, got, tc.want)
		}
		if back := Time(Of(tc.t)); !back.Equal(tc.t) || back.Location() != time.UTC {
			t.Errorf("Time(Of(%v)) = %v", tc.t, back)
		}
	}
	// A time elsewhere comes back as the same instant, in UTC.
	paris := time.Date(2026, 1, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	if back := Time(Of(paris)); !back.Equal(paris) || back.Location() != time.UTC {
		t.Errorf("Time(Of(%v)) = %v", paris, back)
	}
}
