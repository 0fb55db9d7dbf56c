package audit

import (
	"testing"
)

// BenchmarkAppend measures one call's record: encode, hash, write(2), and
// head.json (temporary file and rename) — with and without syncing to disk.
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name string
		sync bool
	}{{"nosync", false}, {"sync", true}} {
		b.Run(bc.name, func(b *testing.B) {
			o := testOptions(b)
			o.SyncEveryRecord = bc.sync
			l := openTest(b, o)
			defer l.Close()
			r := call(1)
			b.ReportAllocs()
			for b.Loop() {
				if err := l.Append(r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
