package budget

import "testing"

func TestMarker(t *testing.T) {
	tests := []struct {
		lines int
		bytes int64
		ref   string
		tool  string
		want  string
	}{
		{48213, 9_600_000, "c1a2", "safe_bash", "... 48,213 lines (9.6 MB) left out ... the full output, page by page: safe_bash --continue c1a2\n"},
		{1, 12, "c9", "safe_read", "... 1 line (12 B) left out ... the full output, page by page: safe_read --continue c9\n"},
		{0, 0, "c0", "", "... 0 lines (0 B) left out ... the full output, page by page: --continue c0\n"},
		{1234567, 1_234_567_890, "c1", "t", "... 1,234,567 lines (1.2 GB) left out ... the full output, page by page: t --continue c1\n"},
	}
	for _, tt := range tests {
		if got := Marker(tt.lines, tt.bytes, tt.ref, tt.tool); got != tt.want {
			t.Errorf("Marker(%d, %d, %q, %q) =\n%q, want\n%q", tt.lines, tt.bytes, tt.ref, tt.tool, got, tt.want)
		}
	}
	m := Marker(48213, 9_600_000, testRef, "safe_bash")
	t.Logf("a marker with a real-length reference is %d tokens", Default().Count([]byte(m)))
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 999: "999 B", 1000: "1.0 kB", 1049: "1.0 kB", 9949: "9.9 kB", 9950: "10 kB",
		512_000: "512 kB", 999_499: "999 kB", 999_500: "1.0 MB", 999_950: "1.0 MB", 48_000_000: "48 MB", 1 << 62: "4.6 EB",
	} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestGroupDigits(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", -1234567: "-1,234,567", 100000: "100,000"} {
		if got := groupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", n, got, want)
		}
	}
}
