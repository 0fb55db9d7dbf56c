// Package hookstartbench measures what reading contextd's [hook] table costs
// the start of `contextd-proxy hook`, which runs before every built-in tool
// call of the agent. Issue 27's rule: the hook reads it with BurntSushi/toml,
// the library the daemon decodes its configuration with, as long as linking
// and using the library costs a process start under 1 ms.
package hookstartbench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/contextd/contextd/proxy/hook"
)

// config is a typical configuration: the example the Debian package ships,
// every table present and commented, [hook] near the end.
const config = "../../packaging/config.example.toml"

// starts is how many times each command is started.
const starts = 200

// commands are the three sides, each a command in the directory of its name:
// the floor (read the file, parse nothing), the library alone, and the hook's
// own reading path.
var commands = []string{"floor", "library", "hook"}

// build builds the command in ./name as the proxy is built (static, no cgo)
// into dir.
func build(b *testing.B, name, dir string) string {
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./"+name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build ./%s: %v: %s", name, err, o)
	}
	return bin
}

// start is one start of a command: its wall time, its CPU time (user and
// system, less disturbed by what else the machine runs), what it printed.
type start struct {
	wall, cpu   time.Duration
	out, stderr string
}

// run starts bin on the configuration once.
func run(b *testing.B, bin string, env ...string) start {
	cmd := exec.Command(bin, config)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t := time.Now()
	err := cmd.Run()
	d := time.Since(t)
	if err != nil {
		b.Fatalf("%s: %v: %s", bin, err, errb.String())
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return start{d, cpu, out.String(), errb.String()}
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// inits reads GODEBUG=inittrace=1 output: each package's initialisation
// clock time.
func inits(trace string) map[string]time.Duration {
	per := map[string]time.Duration{}
	for _, line := range strings.Split(trace, "\n") {
		// init internal/bytealg @0.002 ms, 0 ms clock, 0 bytes, 0 allocs
		f := strings.Fields(line)
		if len(f) < 7 || f[0] != "init" || f[6] != "clock," {
			continue
		}
		if ms, err := strconv.ParseFloat(f[4], 64); err == nil {
			per[f[1]] += time.Duration(ms * float64(time.Millisecond))
		}
	}
	return per
}

// BenchmarkHookStart starts the three commands 200 times each, rotating
// their order, and reports the median and 90th percentile of each one's wall
// and CPU time, and the medians' differences to the floor: library-floor is what
// linking and using BurntSushi/toml costs a start (the 1 ms rule),
// hook-floor what the hook's reading path costs in all.
func BenchmarkHookStart(b *testing.B) {
	dir := b.TempDir()
	bins := make([]string, len(commands))
	for i, c := range commands {
		bins[i] = build(b, c, dir)
		st, err := os.Stat(bins[i])
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%-8s %d bytes", c, st.Size())
	}
	want := run(b, bins[1]).out
	if hk := run(b, bins[2]).out; hk != want {
		b.Fatalf("the hook reads %q, the library %q", hk, want)
	}
	for n := 0; n < b.N; n++ {
		wall := make([][]time.Duration, len(commands))
		cpu := make([][]time.Duration, len(commands))
		for j := 0; j < starts; j++ {
			for k := range commands {
				i := (j + k) % len(commands)
				s := run(b, bins[i])
				wall[i], cpu[i] = append(wall[i], s.wall), append(cpu[i], s.cpu)
			}
		}
		mw := make([]time.Duration, len(commands))
		mc := make([]time.Duration, len(commands))
		for i, c := range commands {
			mw[i], mc[i] = quantile(wall[i], 0.5), quantile(cpu[i], 0.5)
			b.Logf("%-8s wall median %v, p90 %v; CPU median %v, p90 %v", c, mw[i], quantile(wall[i], 0.9), mc[i], quantile(cpu[i], 0.9))
			b.ReportMetric(float64(mw[i].Microseconds()), c+"-wall-us")
			b.ReportMetric(float64(mc[i].Microseconds()), c+"-cpu-us")
		}
		b.Logf("medians: library-floor %v wall, %v CPU; hook-floor %v wall, %v CPU", mw[1]-mw[0], mc[1]-mc[0], mw[2]-mw[0], mc[2]-mc[0])
	}
	// The package initialisations the library adds (BurntSushi/toml reads
	// the local time zone's offset at init).
	floor := inits(run(b, bins[0], "GODEBUG=inittrace=1").stderr)
	lib := inits(run(b, bins[1], "GODEBUG=inittrace=1").stderr)
	var extra []string
	var sum time.Duration
	for p, d := range lib {
		if _, ok := floor[p]; !ok {
			extra = append(extra, fmt.Sprintf("%s %v", p, d))
			sum += d
		}
	}
	slices.Sort(extra)
	b.Logf("inits the library adds (%v): %s", sum, strings.Join(extra, ", "))
}

// BenchmarkHookParse times reading [hook] blocked of the typical
// configuration in process, the file read included: the hook's reading path
// against BurntSushi/toml into the one key.
func BenchmarkHookParse(b *testing.B) {
	b.Run("hook", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, err := hook.BlockList(hook.Options{ConfigFiles: []string{config}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var cfg struct {
				Hook struct{ Blocked *[]string }
			}
			if _, err := toml.DecodeFile(config, &cfg); err != nil {
				b.Fatal(err)
			}
		}
	})
}
