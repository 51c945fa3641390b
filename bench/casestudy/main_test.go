package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunTiny runs every figure for a few milliseconds per point, so that the case study
// cannot rot: each table is printed and each chart written.
func TestRunTiny(t *testing.T) {
	out := t.TempDir()
	cfg, err := parseFlags([]string{"-d", "5ms", "-warmup", "1ms", "-throttle-wait", "1ms", "-store", "mem",
		"-out", out, "-batch-sizes", "1,10", "-threads", "1,2", "-saturate", "2", "-rows", "10"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := run(cfg, &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Figures 5-7", "Figure 8", "Figure 9", "Figures 10-11", "Figure 15"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
	for _, f := range []string{"heat08-09", "heat15"} {
		svg, err := os.ReadFile(filepath.Join(out, f+".svg"))
		if err != nil || !strings.HasPrefix(string(svg), "<svg") || !strings.Contains(string(svg), `class="range`) {
			t.Errorf("heat map %s: %v\n%.200s", f, err, svg)
		}
	}
	for _, f := range []string{"fig05", "fig06", "fig07", "fig08", "fig09", "fig10", "fig11", "fig15"} {
		info, err := os.Stat(filepath.Join(out, f+".svg"))
		if err != nil || info.Size() == 0 {
			t.Errorf("chart %s: %v", f, err)
		}
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-store", "tape"}, {"-shape", "round"}, {"-figs", "12"}, {"-threads", "0"}, {"-d", "0"}, {"-format", "png"}, {"extra"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
	cfg, err := parseFlags(nil, io.Discard)
	if err != nil || cfg.out != "bench/casestudy/out" || len(cfg.figs) != 4 || cfg.inMemory {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
}
