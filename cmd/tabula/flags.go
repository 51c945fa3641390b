package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"
	"regexp"
	"strings"
)

// The command line machinery the subcommands share: help by topic, sizes as people write
// them, and the flag package's errors in the user's terms (two dashes, a guess at the flag
// meant).

// errHelp reports that --help was asked for and answered.
var errHelp = errors.New("help requested")

// flagGroup is a titled set of flags, so that --help reads by topic rather than A to Z.
type flagGroup struct {
	title string
	names []string
}

// sizeUnits are the units a size may carry, matched without regard to case: binary (KiB,
// MiB, GiB, TiB) and decimal (KB, MB, GB, TB, and K, M, G, T as people also write them).
var sizeUnits = map[string]uint64{
	"": 1, "b": 1,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
}

var sizePattern = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?|\.[0-9]+)\s*([A-Za-z]*)$`)

// parseSize reads a size in bytes written as people write it: 512MiB, 1.5GiB, 256mb, 2GB,
// 1TiB, 1048576. A fraction of a byte is dropped.
func parseSize(v string) (uint64, error) {
	m := sizePattern.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return 0, fmt.Errorf("%q is not a size; write one such as 512MiB, 1.5GiB or 2GB", v)
	}
	factor, ok := sizeUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q; use KiB, MiB, GiB, TiB (or KB, MB, GB, TB)", v, m[2])
	}
	n, _ := new(big.Rat).SetString(m[1]) // the pattern admits only what SetString reads
	n.Mul(n, new(big.Rat).SetInt(new(big.Int).SetUint64(factor)))
	bytes := new(big.Int).Quo(n.Num(), n.Denom())
	if !bytes.IsUint64() || bytes.Uint64() == math.MaxUint64 {
		return 0, fmt.Errorf("%q is more bytes than there are", v)
	}
	return bytes.Uint64(), nil
}

// formatSize writes a size in the largest binary unit that keeps it readable: 256MiB, 1.5GiB.
func formatSize(n uint64) string {
	for _, u := range []struct {
		name   string
		factor uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.factor {
			return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", float64(n)/float64(u.factor)), "0"), ".") + u.name
		}
	}
	return fmt.Sprintf("%dB", n)
}

// flagError says what the flag package's err means, naming flags with two dashes as the help
// does, and for a flag that does not exist the nearest that does.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		if guess := nearestFlag(fs, name); guess != "" {
			return fmt.Errorf("there is no flag --%s; did you mean --%s?", name, guess)
		}
		return fmt.Errorf("there is no flag --%s", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return fmt.Errorf("--%s needs a value", strings.TrimLeft(name, "-"))
	}
	// invalid value "x" for flag -memory: …, invalid boolean value "x" for -silent: …
	if m := regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-([^:]+): (.*)$`).FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("--%s %s: %s", m[2], m[1], strings.TrimPrefix(m[3], "parse error"))
	}
	return err
}

// nearestFlag is the flag most like name: the same name in another case or without its
// dashes (--inmemory), one that ends or starts with it at a word (-port for --tablePort),
// one that merely contains it, or one a typo or two away.
func nearestFlag(fs *flag.FlagSet, name string) string {
	given := squash(name)
	best, bestScore := "", 5 // in halves: at most two typos
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" || len(f.Name) < 2 { // short aliases and ignored flags are no guess
			return
		}
		candidate := squash(f.Name)
		score := 2 * editDistance(given, candidate)
		switch {
		case candidate == given:
			score = 0
		case len(given) < 3:
		case atWord(f.Name, len(f.Name)-len(given)) && strings.HasSuffix(candidate, given),
			strings.HasPrefix(candidate, given):
			score = min(score, 1)
		case strings.Contains(candidate, given) || strings.Contains(given, candidate):
			score = min(score, 2)
		}
		if score < bestScore {
			best, bestScore = f.Name, score
		}
	})
	return best
}

// squash is a flag name in lower case without dashes, as its words read.
func squash(name string) string { return strings.ToLower(strings.ReplaceAll(name, "-", "")) }

// atWord reports whether a word of the flag name starts at byte i: after a dash or at a
// capital, as in table-Port or tablePort.
func atWord(name string, i int) bool {
	return i > 0 && i < len(name) && (name[i-1] == '-' || name[i] >= 'A' && name[i] <= 'Z')
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// shortNames are Azurite's one-letter flags, printed beside their long names.
var shortNames = map[string]string{"location": "l", "silent": "s", "debug": "d", "loose": "L", "version": "v"}

// printUsage writes the help: the introduction, then each group's flags with two dashes.
func printUsage(out io.Writer, intro string, fs *flag.FlagSet, groups []flagGroup) {
	fmt.Fprint(out, intro)
	for _, g := range groups {
		fmt.Fprintf(out, "\n%s:\n", g.title)
		for _, name := range g.names {
			f := fs.Lookup(name)
			arg, text := flag.UnquoteUsage(f)
			line := "  --" + f.Name
			if short := shortNames[f.Name]; short != "" {
				line = "  -" + short + ", --" + f.Name
			}
			if arg != "" {
				line += " " + arg
			}
			text = strings.ReplaceAll(text, "\n", "\n        ")
			if d := f.DefValue; d != "" && d != "false" && d != "-1" && d != "0" && !strings.Contains(text, "(default") {
				text += " (default " + d + ")"
			}
			fmt.Fprintf(out, "%s\n        %s\n", line, text)
		}
	}
}
