package bytesize

import "testing"

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"4096", 4096, true},
		{"512MiB", 512 << 20, true},
		{"1G", 1 << 30, true},
		{" 64 kib ", 64 << 10, true},
		{"2TB", 2 << 40, true},
		{"", 0, false},
		{"MiB", 0, false},
		{"-1", 0, false},
		{"1.5GiB", 0, false},
		{"10 parsecs", 0, false},
		{"1PiB", 0, false},
		{"9000000000T", 0, false},
	} {
		got, err := Parse(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Parse(%q) = %d, %v; want %d (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
